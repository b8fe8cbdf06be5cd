//! Print every kernel with its parameters and footprint at the defaults (Markdown).
fn main() {
    for w in xlat_workloads::catalog() {
        println!("### `{}`: {} (footprint at defaults: {:.1} MiB)\n", w.name, w.description, w.footprint_bytes as f64 / (1 << 20) as f64);
        println!("| param | default | meaning |\n|---|---|---|");
        for p in &w.params {
            println!("| `{}` | `{}` | {} |", p.name, p.default, p.doc);
        }
        println!();
    }
}
