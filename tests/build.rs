//! Compiles the PostgreSQL half of the suite only when a database is given, so a machine
//! without PostgreSQL runs the SQLite half and the test count says what ran.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(pg_tests)");
    println!("cargo::rerun-if-env-changed=DRIFTWATCH_TEST_POSTGRES_URL");
    if std::env::var("DRIFTWATCH_TEST_POSTGRES_URL").is_ok_and(|v| !v.trim().is_empty()) {
        println!("cargo::rustc-cfg=pg_tests");
    }
}
