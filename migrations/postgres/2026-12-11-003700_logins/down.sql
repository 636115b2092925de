DROP TABLE watch_sessions;
DROP TABLE account_secrets;
