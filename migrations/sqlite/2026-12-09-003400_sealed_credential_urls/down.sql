ALTER TABLE endpoints DROP COLUMN url_secret;
