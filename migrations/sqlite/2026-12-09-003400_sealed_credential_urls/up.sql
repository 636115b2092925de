-- A credential URL (a chat service's webhook URL, which carries its key) sealed like other
-- secrets; `url` then holds it masked, for display.
ALTER TABLE endpoints ADD COLUMN url_secret TEXT;
