ALTER TABLE accounts DROP COLUMN llm_daily_tokens;
ALTER TABLE accounts DROP COLUMN llm_api_key;
ALTER TABLE accounts DROP COLUMN llm_model;
ALTER TABLE accounts DROP COLUMN llm_base_url;
DROP TABLE ai_usage;
DROP TABLE ai_cache;
DROP TABLE verdicts;
