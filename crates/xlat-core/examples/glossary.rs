//! Print `docs/statistics.md`, generated from the statistics' declarations as the glossary
//! (`crates/xlat-core/src/glossary.rs`) gathers them:
//! `cargo run --release -p xlat-core --example glossary > docs/statistics.md`.
fn main() {
    print!("{}", xlat_core::machine::glossary::markdown());
}
