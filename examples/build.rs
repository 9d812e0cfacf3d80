//! Turns the README's Rust code blocks into functions that the crate's tests compile and run
//! (see `src/lib.rs`), so that the README cannot show code that does not build.
//!
//! Each ```` ```rust ```` block becomes `fn block_N() -> Result<(), Box<dyn Error>>` holding,
//! first, the HTML comment right before it, if it opens with `<!-- readme setup` (the
//! declarations a block leans on without showing them: hidden on the rendered page), then the
//! block itself.

use std::fmt::Write as _;

fn main() {
    let readme_path = concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md");
    println!("cargo:rerun-if-changed={readme_path}");
    let readme = std::fs::read_to_string(readme_path).expect("the README beside the workspace");
    let mut out = String::new();
    let mut names = Vec::new();
    let mut setup: Option<String> = None;
    let mut lines = readme.lines().enumerate();
    while let Some((number, line)) = lines.next() {
        if line.trim_start().starts_with("<!-- readme setup") {
            let mut text = String::new();
            for (_, line) in lines.by_ref() {
                if line.trim() == "-->" {
                    break;
                }
                text.push_str(line);
                text.push('\n');
            }
            setup = Some(text);
        } else if line.trim() == "```rust" {
            let name = format!("block_{}", number + 1);
            let mut body = String::new();
            for (_, line) in lines.by_ref() {
                if line.trim() == "```" {
                    break;
                }
                body.push_str(line);
                body.push('\n');
            }
            let setup = setup.take().unwrap_or_default();
            write!(
                out,
                "/// The README's block at line {}.\n\
                 #[allow(unused, clippy::all, clippy::pedantic)]\n\
                 pub fn {name}() -> Result<(), Box<dyn std::error::Error>> {{\n\
                 {setup}{body}Ok(())\n}}\n\n",
                number + 1
            )
            .expect("writing to a string");
            names.push(name);
        } else if !line.trim().is_empty() {
            // A setup comment belongs to the block right after it only.
            setup = None;
        }
    }
    writeln!(
        out,
        "/// A block run: `Ok` or its error.\npub type Block = fn() -> Result<(), Box<dyn std::error::Error>>;\n\n/// Every block, with its name.\npub const BLOCKS: &[(&str, Block)] = &[{}];",
        names
            .iter()
            .map(|n| format!("(\"{n}\", {n})"))
            .collect::<Vec<_>>()
            .join(", ")
    )
    .expect("writing to a string");
    let target = std::path::Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"))
        .join("readme.rs");
    std::fs::write(target, out).expect("writing the README's blocks");
}
