//! Print `docs/statistics.md`, generated from the statistics glossary
//! (`crates/xlat-core/src/glossary.rs`):
//! `cargo run --release -p xlat-core --example glossary > docs/statistics.md`.
fn main() {
    print!("{}", xlat_core::glossary::markdown());
}
