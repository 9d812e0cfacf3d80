//! Shared helpers for the runnable examples in `examples/examples/`, and the test that runs
//! the README's code. Examples use the typed layer and the patterns, as an application would.

pub mod web;

/// The README's Rust code blocks, as functions (written by `build.rs`).
#[cfg(test)]
mod readme {
    include!(concat!(env!("OUT_DIR"), "/readme.rs"));

    /// Every Rust block of the README compiles and runs without error, in a fresh directory
    /// (the blocks open database files by relative path).
    #[test]
    fn readme_code_blocks_run() {
        let dir = std::env::temp_dir().join(format!("odm-readme-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::env::set_current_dir(&dir).unwrap();
        assert!(
            BLOCKS.len() >= 3,
            "the README shows its code in ```rust blocks"
        );
        for (name, block) in BLOCKS {
            if let Err(e) = block() {
                panic!("the README's {name} fails: {e}");
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
