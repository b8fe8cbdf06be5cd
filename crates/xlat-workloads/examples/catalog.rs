//! Print every kernel with its parameters and footprint at the defaults (Markdown): the
//! tables of docs/workloads.md (a test checks they match).
fn main() {
    print!("{}", xlat_workloads::catalog_markdown());
}
