//! Diff throughput on 1,000-line snapshots: unchanged, one line changed, 10% changed.
//! Run with `cargo bench -p driftwatch-diff`.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Instant;

use driftwatch_diff::diff_texts;

fn measure(name: &str, iterations: u32, mut f: impl FnMut()) {
    for _ in 0..iterations / 10 {
        f();
    }
    let start = Instant::now();
    for _ in 0..iterations {
        f();
    }
    let per = start.elapsed() / iterations;
    println!("{name:<32} {:>10.1} µs/op {:>10.0} ops/s", per.as_secs_f64() * 1e6, 1.0 / per.as_secs_f64());
}

fn main() {
    let old: String = (0..1000).map(|i| format!("line {i}: the quick brown fox\n")).collect();
    let one = old.replace("line 500: the quick", "line 500: the slow");
    let tenth: String = (0..1000)
        .map(|i| if i % 10 == 0 { format!("line {i}: changed\n") } else { format!("line {i}: the quick brown fox\n") })
        .collect();
    measure("1000 lines, unchanged", 500, || {
        black_box(diff_texts(black_box(&old), black_box(&old), "a", "b"));
    });
    measure("1000 lines, one changed", 500, || {
        black_box(diff_texts(black_box(&old), black_box(&one), "a", "b"));
    });
    measure("1000 lines, 10% changed", 200, || {
        black_box(diff_texts(black_box(&old), black_box(&tenth), "a", "b"));
    });
}
