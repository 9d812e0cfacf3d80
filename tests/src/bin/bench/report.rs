//! Timing helpers and the printed table: medians over runs, per operation.

use std::time::Instant;

/// Which build measured: figures of a debug build (CI's smoke run) are not the release
/// build's, and say so.
pub fn build() -> &'static str {
    if cfg!(debug_assertions) {
        "debug build (a check that the systems agree; its speeds are not the release build's)"
    } else {
        "release build"
    }
}

/// Runs `f` and returns its wall time in microseconds per operation.
pub fn per_op<T>(ops: usize, f: impl FnOnce() -> T) -> (T, f64) {
    let start = Instant::now();
    let out = f();
    let micros = start.elapsed().as_secs_f64() * 1e6;
    (out, micros / ops.max(1) as f64)
}

pub fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        f64::midpoint(xs[n / 2 - 1], xs[n / 2])
    }
}

/// One row of the table: a phase with each system's median µs per operation.
pub struct Row {
    pub phase: &'static str,
    pub unit: &'static str,
    pub values: Vec<f64>,
}

pub fn print_table(systems: &[&str], rows: &[Row]) {
    print!("{:<34}", "phase (median µs per op)");
    for s in systems {
        print!("{s:>14}");
    }
    println!();
    for row in rows {
        print!("{:<34}", format!("{} ({})", row.phase, row.unit));
        for v in &row.values {
            print!("{v:>14.3}");
        }
        println!();
    }
}
