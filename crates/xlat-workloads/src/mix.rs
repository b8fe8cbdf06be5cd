//! Mixes: several programs on one machine, each a workload kernel or a trace, each in its own
//! address space, pinned to cores of its own (`bfs@0,gups:scale=22@1,trace:run.xtr@2`).
//!
//! A mix is one [`RefSource`] whose streams are the machine's cores: core `c` delivers the
//! stream of the program pinned there (its `k`-th thread if the program has several), and a
//! core no program names delivers nothing. [`RefSource::programs`] tells the engine which
//! streams belong together, so each program gets its own processes (or VM).
//!
//! Programs may also share cores (`canneal:threads=8@0-7,cc:threads=8@0-7`): each core then
//! time-slices them, which the engine does for programs in VMs of their own (the CSALT
//! thesis's pairs of VMs). A program shares all of its cores or none, and the `j`-th program
//! on a set of cores has place `j` ([`Program::slot`]): with `k` places over cores `0..w`, the
//! mix has `w * k` streams, and the program at place `j` delivers its thread on core `c` as
//! stream `c + j * w`.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use xlat_core::{Program, Ref, RefSource, Region, SourceError};

use crate::{WorkloadDesc, WorkloadError};

/// One program of a mix, as written: its workload spec (or `trace:PATH`) and its cores.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MixEntry {
    pub spec: String,
    /// The cores named after `@`; `None`: the lowest free ones, as many as it has threads.
    pub cores: Option<Vec<usize>>,
}

/// Split a mix spec into its programs. Programs are separated by commas, as are a workload's
/// parameters: a `key=value` item continues the program before it, anything else starts a
/// new one (`bfs:scale=16,threads=2@0-1,gups@2` is two programs). Each may end in `@N` or
/// `@N-M`, the cores it runs on.
pub fn parse(spec: &str) -> Result<Vec<MixEntry>, WorkloadError> {
    let bad = |why: String| WorkloadError::BadSpec { spec: spec.to_string(), why };
    let mut items: Vec<String> = Vec::new();
    for item in spec.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(bad("an empty program between commas".into()));
        }
        // (A parameter's key has no ':' and no '@'; a workload name is never `key=value`.)
        let continues = item.split_once('=').is_some_and(|(k, _)| !k.contains(':') && !k.contains('@'));
        match items.last_mut() {
            Some(last) if continues && !last.contains('@') => {
                last.push(',');
                last.push_str(item);
            }
            _ if continues => return Err(bad(format!("'{item}' is a parameter, but no program before it takes parameters"))),
            _ => items.push(item.to_string()),
        }
    }
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let (spec_part, cores) = match item.rsplit_once('@') {
            Some((s, c)) => (s.trim().to_string(), Some(parse_cores(c).ok_or_else(|| bad(format!("'@{c}' is not a core (N) or a range of cores (N-M)")))?)),
            None => (item.clone(), None),
        };
        if spec_part.is_empty() {
            return Err(bad(format!("'{item}' names no program")));
        }
        out.push(MixEntry { spec: spec_part, cores });
    }
    if out.is_empty() {
        return Err(bad("no programs".into()));
    }
    Ok(out)
}

fn parse_cores(s: &str) -> Option<Vec<usize>> {
    let s = s.trim();
    let (a, b) = match s.split_once('-') {
        Some((a, b)) => (a.trim().parse().ok()?, b.trim().parse().ok()?),
        None => {
            let n = s.parse().ok()?;
            (n, n)
        }
    };
    (a <= b && b < 4096).then(|| (a..=b).collect())
}

/// The programs of a mix, opened: each one's source, description and cores.
pub struct MixSource {
    parts: Vec<Part>,
    /// Per stream: the program and its thread there, or `None` (an idle core).
    map: Vec<Option<(usize, usize)>>,
    /// Cores the streams cover (`w`: stream `s` runs on core `s % w`).
    width: usize,
}

struct Part {
    desc: WorkloadDesc,
    src: Box<dyn RefSource>,
    cores: Vec<usize>,
    /// Its place among the programs sharing its cores (0: the first, or alone).
    slot: usize,
}

impl MixSource {
    /// Open every program of `spec` (see [`parse`]). Program `i` runs with seed `seed + i`
    /// unless its spec sets `seed=`, so two copies of one workload do different work.
    pub fn open(spec: &str, seed: u64, stop: Arc<AtomicBool>) -> Result<MixSource, WorkloadError> {
        MixSource::open_with(spec, seed, stop, None)
    }

    /// As [`MixSource::open`]; with `page_regions` (an alignment), a trace program without regions gets them
    /// from its pages (for `--prefault`: [`crate::open_trace_with`]).
    pub fn open_with(spec: &str, seed: u64, stop: Arc<AtomicBool>, page_regions: Option<u64>) -> Result<MixSource, WorkloadError> {
        let entries = parse(spec)?;
        // Per core: how many programs run there so far.
        let mut taken: Vec<usize> = Vec::new();
        let mut parts = Vec::with_capacity(entries.len());
        for (i, e) in entries.iter().enumerate() {
            let (desc, src) = match e.spec.strip_prefix("trace:") {
                Some(path) => crate::open_trace_until(&[path.to_string()], None, page_regions, crate::trace::Layout::AS_TRACED, &stop)?,
                None => crate::open_until(&e.spec, seed.wrapping_add(i as u64), stop.clone())?,
            };
            let n = src.streams();
            let cores = match &e.cores {
                Some(c) if c.len() != n => {
                    return Err(WorkloadError::BadSpec {
                        spec: spec.to_string(),
                        why: format!("program {i} ({}) has {n} thread(s) but @ names {} core(s)", e.spec, c.len()),
                    })
                }
                Some(c) => c.clone(),
                None => (0..).filter(|&c| taken.get(c).copied().unwrap_or(0) == 0).take(n).collect(),
            };
            let before = |c: usize| taken.get(c).copied().unwrap_or(0);
            let slot = cores.first().map_or(0, |&c| before(c));
            if let Some(&c) = cores.iter().find(|&&c| before(c) != slot) {
                let first = cores[0];
                return Err(WorkloadError::BadSpec {
                    spec: spec.to_string(),
                    why: format!(
                        "program {i} ({}) shares some of its cores but not all (core {first} runs {} program(s) before it, core {c} {}): programs that share cores share all of them",
                        e.spec,
                        before(first),
                        before(c)
                    ),
                });
            }
            for &c in &cores {
                if taken.len() <= c {
                    taken.resize(c + 1, 0);
                }
                taken[c] += 1;
            }
            parts.push(Part { desc, src, cores, slot });
        }
        let width = taken.len();
        let places = taken.iter().copied().max().unwrap_or(1).max(1);
        let mut map = vec![None; width * places];
        for (p, part) in parts.iter().enumerate() {
            for (k, &c) in part.cores.iter().enumerate() {
                map[c + part.slot * width] = Some((p, k));
            }
        }
        Ok(MixSource { parts, map, width })
    }

    /// The mix as a workload description: name `mix`, and per program `progN` = its resolved
    /// spec `@` its cores (which [`MixSource::open`] reads back as the same mix).
    pub fn desc(&self) -> WorkloadDesc {
        let params = self.parts.iter().enumerate().map(|(i, p)| (format!("prog{i}"), format!("{}@{}", spec_of(&p.desc), cores_text(&p.cores)))).collect();
        WorkloadDesc { name: "mix".into(), params }
    }
}

/// A program's spec as the mix syntax reads it back.
fn spec_of(d: &WorkloadDesc) -> String {
    if d.name == "trace" {
        let path = d.params.iter().find(|(k, _)| k == "paths").map(|(_, v)| v.clone()).unwrap_or_default();
        return format!("trace:{path}");
    }
    d.spec()
}

fn cores_text(cores: &[usize]) -> String {
    match (cores.first(), cores.last()) {
        (Some(a), Some(b)) if a == b => a.to_string(),
        (Some(a), Some(b)) => format!("{a}-{b}"),
        _ => String::new(),
    }
}

impl RefSource for MixSource {
    fn streams(&self) -> usize {
        self.map.len()
    }

    fn regions(&self) -> Vec<Region> {
        self.parts.iter().flat_map(|p| p.src.regions()).collect()
    }

    fn programs(&self) -> Vec<Program> {
        self.parts
            .iter()
            .map(|p| Program {
                name: spec_of(&p.desc),
                regions: p.src.regions(),
                streams: p.cores.iter().map(|&c| c + p.slot * self.width).collect(),
                slot: p.slot,
            })
            .collect()
    }

    fn next_batch(&mut self, stream: usize, out: &mut Vec<Ref>) -> Result<(), SourceError> {
        match self.map.get(stream).copied().flatten() {
            Some((p, k)) => self.parts[p].src.next_batch(k, out),
            None => {
                out.clear();
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(spec: &str, cores: Option<Vec<usize>>) -> MixEntry {
        MixEntry { spec: spec.into(), cores }
    }

    #[test]
    fn commas_separate_programs_and_parameters() {
        assert_eq!(parse("bfs@0,gups@1").unwrap(), vec![entry("bfs", Some(vec![0])), entry("gups", Some(vec![1]))]);
        assert_eq!(
            parse("bfs:scale=16,threads=2@0-1, gups:scale=20").unwrap(),
            vec![entry("bfs:scale=16,threads=2", Some(vec![0, 1])), entry("gups:scale=20", None)]
        );
        assert_eq!(parse("trace:/tmp/a.xtr@3").unwrap(), vec![entry("trace:/tmp/a.xtr", Some(vec![3]))]);
    }

    #[test]
    fn bad_mixes_say_what_is_wrong() {
        for (spec, why) in [
            ("", "empty program"),
            ("bfs,,gups", "empty program"),
            ("scale=3,bfs", "no program before it"),
            ("bfs@x", "not a core"),
            ("bfs@3-1", "not a core"),
            ("@2", "names no program"),
            ("bfs@0,gups:scale=3@0,threads=2", "no program before it"),
        ] {
            let e = parse(spec).unwrap_err().to_string();
            assert!(e.contains(why), "{spec}: {e}");
        }
    }

    #[test]
    fn programs_that_share_cores_get_places_and_streams_of_their_own() {
        let stop = Arc::new(AtomicBool::new(false));
        let m = MixSource::open("random:footprint=64M,threads=2@0-1,gups:footprint=64M,threads=2@0-1,random:footprint=64M@2", 1, stop.clone()).unwrap();
        // Three cores, two places: six streams, the second program's at 3 and 4, core 2's
        // second place idle.
        assert_eq!(m.streams(), 6);
        let p = m.programs();
        assert_eq!((p[0].streams.clone(), p[0].slot), (vec![0, 1], 0));
        assert_eq!((p[1].streams.clone(), p[1].slot), (vec![3, 4], 1));
        assert_eq!((p[2].streams.clone(), p[2].slot), (vec![2], 0));
        let mut m = m;
        let mut out = Vec::with_capacity(16);
        m.next_batch(5, &mut out).unwrap();
        assert!(out.is_empty(), "an idle place delivers nothing");
        m.next_batch(3, &mut out).unwrap();
        assert!(!out.is_empty());
        let e = MixSource::open("random@0,gups:threads=2@0-1", 1, stop).err().unwrap().to_string();
        assert!(e.contains("shares some of its cores but not all"), "{e}");
    }
}
