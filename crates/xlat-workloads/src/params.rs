//! Workload spec strings: `name:key=value,key=value`.

use crate::WorkloadError;

#[derive(Clone, Copy, Debug)]
pub enum PKind {
    /// Non-negative integer; accepts binary suffixes K, M, G, T (optionally followed by
    /// `B` or `iB`): `64K` = 65536, `8G` = 8 << 30.
    Size,
    Float,
    Choice(&'static [&'static str]),
}

#[derive(Clone, Copy, Debug)]
pub struct PDef {
    pub name: &'static str,
    pub default: &'static str,
    pub doc: &'static str,
    pub kind: PKind,
}

pub const fn size(name: &'static str, default: &'static str, doc: &'static str) -> PDef {
    PDef { name, default, doc, kind: PKind::Size }
}
pub const fn float(name: &'static str, default: &'static str, doc: &'static str) -> PDef {
    PDef { name, default, doc, kind: PKind::Float }
}
pub const fn choice(name: &'static str, default: &'static str, doc: &'static str, options: &'static [&'static str]) -> PDef {
    PDef { name, default, doc, kind: PKind::Choice(options) }
}

/// Parameters every kernel takes, appended after its own.
pub const COMMON: &[PDef] = &[
    size("seed", "0", "random seed of the kernel's choices (inputs, keys, roots); unless given, the run's seed (--seed)"),
    size("threads", "1", "simulated threads; each emits one reference stream (work is split deterministically)"),
    size("limit", "0", "stop after this many references in total over all streams (0 = run to completion)"),
];

#[derive(Clone, Debug)]
enum PVal {
    U(u64),
    F(f64),
    S(&'static str),
}

#[derive(Clone, Debug)]
pub struct Params {
    pub workload: &'static str,
    vals: Vec<(&'static str, String, PVal)>,
}

pub fn parse_size(s: &str) -> Option<u64> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let body = lower.strip_suffix("ib").or_else(|| lower.strip_suffix('b')).unwrap_or(&lower);
    let (num, shift) = match body.chars().last()? {
        'k' => (&body[..body.len() - 1], 10),
        'm' => (&body[..body.len() - 1], 20),
        'g' => (&body[..body.len() - 1], 30),
        't' => (&body[..body.len() - 1], 40),
        _ => (body, 0),
    };
    let num = num.replace('_', "");
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let v: u64 = num.parse().ok()?;
    v.checked_mul(1u64 << shift)
}

fn parse_val(d: &PDef, v: &str) -> Result<PVal, String> {
    match d.kind {
        PKind::Size => parse_size(v).map(PVal::U).ok_or_else(|| "expected a non-negative integer, optionally with K/M/G/T".to_string()),
        PKind::Float => match v.trim().parse::<f64>() {
            Ok(f) if f.is_finite() => Ok(PVal::F(f)),
            _ => Err("expected a number".to_string()),
        },
        PKind::Choice(opts) => {
            opts.iter().find(|o| o.eq_ignore_ascii_case(v.trim())).map(|o| PVal::S(o)).ok_or_else(|| format!("expected one of {}", opts.join("|")))
        }
    }
}

impl Params {
    /// Resolve `kvs` against `defs` (kernel params then [`COMMON`]).
    pub fn resolve(workload: &'static str, defs: &[PDef], kvs: &[(String, String)], seed: u64) -> Result<Params, WorkloadError> {
        let all: Vec<&PDef> = defs.iter().chain(COMMON.iter()).collect();
        let mut vals = Vec::with_capacity(all.len());
        for d in &all {
            let default = if d.name == "seed" { seed.to_string() } else { d.default.to_string() };
            let pv = parse_val(d, &default).map_err(|why| WorkloadError::BadValue {
                workload: workload.to_string(),
                param: d.name.to_string(),
                value: default.clone(),
                why,
            })?;
            vals.push((d.name, default, pv));
        }
        for (k, v) in kvs {
            let idx = all.iter().position(|d| d.name.eq_ignore_ascii_case(k)).ok_or_else(|| WorkloadError::UnknownParam {
                workload: workload.to_string(),
                param: k.clone(),
                allowed: all.iter().map(|d| d.name).collect::<Vec<_>>().join(", "),
            })?;
            let pv = parse_val(all[idx], v).map_err(|why| WorkloadError::BadValue {
                workload: workload.to_string(),
                param: all[idx].name.to_string(),
                value: v.clone(),
                why,
            })?;
            vals[idx].1 = match pv {
                PVal::S(s) => s.to_string(),
                _ => v.trim().to_string(),
            };
            vals[idx].2 = pv;
        }
        let p = Params { workload, vals };
        // Every kernel splits its work over `threads` streams: none is no run at all.
        p.range("threads", 1, 4096)?;
        Ok(p)
    }

    fn get(&self, name: &str) -> &PVal {
        match self.vals.iter().find(|v| v.0 == name) {
            Some(v) => &v.2,
            // Kernels only ask for names they declared; reaching this is a bug in xlat.
            None => panic!("workload {}: undeclared parameter {name}", self.workload),
        }
    }

    pub fn u64(&self, name: &str) -> u64 {
        match self.get(name) {
            PVal::U(u) => *u,
            PVal::F(f) => *f as u64,
            PVal::S(_) => 0,
        }
    }

    pub fn f64(&self, name: &str) -> f64 {
        match self.get(name) {
            PVal::U(u) => *u as f64,
            PVal::F(f) => *f,
            PVal::S(_) => 0.0,
        }
    }

    pub fn str(&self, name: &str) -> &'static str {
        match self.get(name) {
            PVal::S(s) => s,
            _ => "",
        }
    }

    pub fn seed(&self) -> u64 {
        self.u64("seed")
    }
    pub fn threads(&self) -> usize {
        self.u64("threads").clamp(1, 4096) as usize
    }
    pub fn limit(&self) -> u64 {
        self.u64("limit")
    }

    /// Resolved `(name, value)` pairs in declaration order, defaults included.
    pub fn pairs(&self) -> Vec<(String, String)> {
        self.vals.iter().map(|v| (v.0.to_string(), v.1.clone())).collect()
    }

    /// A validation error for a value that parsed but is out of range.
    pub fn bad(&self, param: &str, why: impl Into<String>) -> WorkloadError {
        let value = self.vals.iter().find(|v| v.0 == param).map(|v| v.1.clone()).unwrap_or_default();
        WorkloadError::BadValue { workload: self.workload.to_string(), param: param.to_string(), value, why: why.into() }
    }

    /// `Ok(v)` if `lo <= v <= hi`, else a one-line error.
    pub fn range(&self, name: &str, lo: u64, hi: u64) -> Result<u64, WorkloadError> {
        let v = self.u64(name);
        if v < lo || v > hi {
            return Err(self.bad(name, format!("must be between {lo} and {hi}")));
        }
        Ok(v)
    }
}

/// Split `name:k=v,k=v` into the name and raw pairs.
pub fn split_spec(spec: &str) -> Result<(String, Vec<(String, String)>), WorkloadError> {
    let spec = spec.trim();
    let (name, rest) = match spec.split_once(':') {
        Some((n, r)) => (n.trim(), r),
        None => (spec, ""),
    };
    if name.is_empty() {
        return Err(WorkloadError::BadSpec { spec: spec.to_string(), why: "empty workload name".into() });
    }
    let mut kvs = Vec::new();
    for item in rest.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (k, v) = item.split_once('=').ok_or_else(|| WorkloadError::BadSpec { spec: spec.to_string(), why: format!("'{item}' is not key=value") })?;
        kvs.push((k.trim().to_string(), v.trim().to_string()));
    }
    Ok((name.to_ascii_lowercase(), kvs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("8G"), Some(8 << 30));
        assert_eq!(parse_size("512M"), Some(512 << 20));
        assert_eq!(parse_size("64k"), Some(65536));
        assert_eq!(parse_size("64KiB"), Some(65536));
        assert_eq!(parse_size("1_000"), Some(1000));
        assert_eq!(parse_size("12"), Some(12));
        assert_eq!(parse_size("-1"), None);
        assert_eq!(parse_size("G"), None);
        assert_eq!(parse_size("1.5G"), None);
        assert_eq!(parse_size("99999999999T"), None);
    }

    #[test]
    fn spec_split() {
        let (n, kv) = split_spec("GUPS:footprint=8G, seed=3").unwrap();
        assert_eq!(n, "gups");
        assert_eq!(kv, vec![("footprint".into(), "8G".into()), ("seed".into(), "3".into())]);
        assert!(split_spec("gups:footprint").is_err());
        assert!(split_spec(":x=1").is_err());
    }
}
