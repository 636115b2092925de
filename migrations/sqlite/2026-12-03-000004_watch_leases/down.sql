DROP INDEX watches_leased;
