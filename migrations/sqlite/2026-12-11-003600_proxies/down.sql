DROP TABLE proxies;
