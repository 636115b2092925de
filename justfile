# Developer shortcuts. Nothing here is needed to run or test driftwatch: the README's two
# commands are plain cargo. (`cargo install just --locked` if you want these.)

pg_url := env_var_or_default("DRIFTWATCH_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test")

# Run driftwatch on the embedded SQLite default (driftwatch.db in this directory).
run *args:
    cargo run --release -- serve {{args}}

# The test suite on SQLite (the README's test command).
test:
    cargo test --workspace

# The test suite on SQLite and PostgreSQL, as CI runs it.
test-pg:
    DRIFTWATCH_TEST_POSTGRES_URL={{pg_url}} cargo test --workspace

# The browser tests only (UI and harness); screenshots land in target/screenshots/.
test-browser *args:
    DRIFTWATCH_REQUIRE_BROWSER=1 cargo test -p driftwatch-tests --test e2e -- browser {{args}}

# Fuzz the API from its OpenAPI document with schemathesis (as CI does; more examples find more).
fuzz examples="50" seed="1":
    DRIFTWATCH_FUZZ_EXAMPLES={{examples}} DRIFTWATCH_FUZZ_SEED={{seed}} .ci/fuzz

# Formatting, lints and doc comments as errors (what CI checks first).
lint:
    cargo fmt --all -- --check
    cargo clippy --workspace --all-targets -- -D warnings
    RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --workspace --quiet

# Benchmarks: extraction and diffing, then checks and durable delivery on SQLite and PostgreSQL
# (the `driftwatch-bench` binary; `cargo run --release -p driftwatch-bench -- --help` lists all).
bench count="20000":
    cargo bench -p driftwatch-scrape -p driftwatch-diff
    cargo run --release -p driftwatch-bench -- checks --watches 1000
    cargo run --release -p driftwatch-bench -- checks --watches 10000
    cargo run --release -p driftwatch-bench -- delivery --count {{count}}
    psql "{{pg_url}}" -qc "DROP DATABASE IF EXISTS driftwatch_bench" -c "CREATE DATABASE driftwatch_bench"
    cargo run --release -p driftwatch-bench -- delivery --count {{count}} --database-url "$(echo {{pg_url}} | sed 's|/[^/]*$|/driftwatch_bench|')"
    psql "{{pg_url}}" -qc "DROP DATABASE IF EXISTS driftwatch_bench" -c "CREATE DATABASE driftwatch_bench"
    cargo run --release -p driftwatch-bench -- checks --watches 10000 --database-url "$(echo {{pg_url}} | sed 's|/[^/]*$|/driftwatch_bench|')"

# The outside-in API delivery harness (bench/harness/api.py; `--help` lists its options): test
# events through a real `driftwatch serve` to an aiohttp receiver, beside the raw client's rate.
# e.g. `just harness --driftwatch target/release/driftwatch --database postgres --rounds 2`
harness *args:
    test -x target/harness-venv/bin/python || (python3 -m venv target/harness-venv && target/harness-venv/bin/pip install -q -r bench/harness/requirements.txt)
    target/harness-venv/bin/python bench/harness/api.py {{args}}
