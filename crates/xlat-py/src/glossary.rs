//! Bindings for the statistics glossary (`xlat_core::glossary`).
use pyo3::prelude::*;
use xlat_core::glossary;

/// A glossary entry for Python: (pattern, section, kind, unit, doc, only).
type Row = (&'static str, &'static str, &'static str, &'static str, &'static str, &'static str);

/// Every glossary entry, in document order.
#[pyfunction]
fn stat_glossary() -> Vec<Row> {
    xlat_core::machine::glossary::entries().iter().map(|e| (e.pattern, e.section.title(), e.kind.name(), e.unit, e.doc, e.only)).collect()
}

/// The pattern of the glossary entry that a concrete statistic name matches, if any.
#[pyfunction]
fn stat_lookup(name: &str) -> Option<&'static str> {
    xlat_core::machine::glossary::lookup(name).map(|e| e.pattern)
}

/// The glossary's sections in document order: (title, introduction).
#[pyfunction]
fn stat_sections() -> Vec<(&'static str, &'static str)> {
    glossary::Section::ALL.iter().map(|s| (s.title(), s.intro())).collect()
}

/// The placeholders of name patterns: (name, values (empty: any number), doc).
#[pyfunction]
fn stat_placeholders() -> Vec<(&'static str, Vec<&'static str>, &'static str)> {
    glossary::PLACEHOLDERS.iter().map(|p| (p.name, p.values.to_vec(), p.doc)).collect()
}

/// A statistic or configuration key with an old structure name replaced by its one name
/// (`nested_tlb.hits` is `tlb.nested.hits`); other names unchanged.
#[pyfunction]
fn canonical_name(name: &str) -> String {
    glossary::canonical(name).into_owned()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(canonical_name, m)?)?;
    m.add_function(wrap_pyfunction!(stat_glossary, m)?)?;
    m.add_function(wrap_pyfunction!(stat_lookup, m)?)?;
    m.add_function(wrap_pyfunction!(stat_sections, m)?)?;
    m.add_function(wrap_pyfunction!(stat_placeholders, m)?)?;
    Ok(())
}
