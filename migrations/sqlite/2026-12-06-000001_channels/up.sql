-- Channels beyond webhooks. An endpoint's kind has its own settings (a JSON object: a chat id,
-- an SMTP host, a topic...) and its own secrets (a bot token, a password...: a JSON object
-- sealed with the server's key, never stored in the clear), optional title and body templates,
-- and a route: NULL in both route columns for every watch (as before), otherwise the watches
-- with one of `route_tags` or listed in `route_watches` (comma-separated). A muted watch is
-- still checked and recorded, but queues no deliveries.
ALTER TABLE endpoints ADD COLUMN settings TEXT NOT NULL DEFAULT '{}';
ALTER TABLE endpoints ADD COLUMN secrets TEXT;
ALTER TABLE endpoints ADD COLUMN title_template TEXT;
ALTER TABLE endpoints ADD COLUMN body_template TEXT;
ALTER TABLE endpoints ADD COLUMN route_tags TEXT;
ALTER TABLE endpoints ADD COLUMN route_watches TEXT;
ALTER TABLE watches ADD COLUMN muted BOOLEAN NOT NULL DEFAULT 0;
