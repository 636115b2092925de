-- SQLite is one node and has no notifications; this keeps both backends' lists the same.
SELECT 1;
