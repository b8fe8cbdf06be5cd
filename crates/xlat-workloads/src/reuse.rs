//! Page reuse distances (seed 001, the PCC paper's Fig. 2 and §3.1; `001_pcc.spec.md`
//! §10.1 item 9): for every 4 KB page a workload or trace touches, how far apart its uses
//! are, and how far apart the uses of its 2 MB and 1 GB regions are. Pages whose own reuse
//! is too far for a TLB but whose 2 MB region's is near are the *HUB* pages a 2 MB page
//! serves best.
//!
//! **Distance** between two consecutive uses of a page (or region), in the data references
//! of every stream together, in the order the source gives them (stream by stream, batch by
//! batch):
//! - [`Distance::Accesses`] (the paper's definition): the references to *other* pages (or
//!   regions) in between;
//! - [`Distance::Distinct`] (stack distance, the better predictor of LRU TLB hits): the
//!   distinct other pages (or regions) in between, counted with a Fenwick tree over time.
//!
//! A page's distance is the artifact's smoothing of its successive distances: an
//! exponential moving average, 0.9 old + 0.1 new (the first taken as is), that skips a
//! distance more than three standard deviations above the mean of those before it (a
//! phase change, not the page's habit; judged once two or more, not all equal, came before). A page used once has none (`None`: infinite).
//!
//! **Classes** (threshold 1024, the paper's 1024-entry L2 TLB): *TLB-friendly* if the 4 KB
//! distance is below it; *HUB* if not, but the 2 MB region's is; *low reuse* otherwise.
//! Instruction fetches and OS calls are not data references and are skipped.

use std::collections::HashMap;

use xlat_core::{RefKind, RefSource, SourceError};

/// How the distance between two uses is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distance {
    /// References to other pages in between (the paper's).
    Accesses,
    /// Distinct other pages in between (stack distance).
    Distinct,
}

/// The PCC paper's classes of 4 KB pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    TlbFriendly,
    Hub,
    LowReuse,
}

impl Class {
    /// The class of a page whose own distance is `d4k` and whose 2 MB region's is `d2m`
    /// (`None`: used once, infinitely far), at `threshold`.
    pub fn of(d4k: Option<f64>, d2m: Option<f64>, threshold: f64) -> Class {
        let near = |d: Option<f64>| d.is_some_and(|d| d < threshold);
        if near(d4k) {
            Class::TlbFriendly
        } else if near(d2m) {
            Class::Hub
        } else {
            Class::LowReuse
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Class::TlbFriendly => "tlb-friendly",
            Class::Hub => "hub",
            Class::LowReuse => "low-reuse",
        }
    }
}

/// One 4 KB page's reuse: its own distance and its regions'.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PageReuse {
    /// VA >> 12.
    pub page: u64,
    pub accesses: u64,
    pub d4k: Option<f64>,
    pub d2m: Option<f64>,
    pub d1g: Option<f64>,
}

/// The smoothed distance of one page or region.
#[derive(Clone, Copy, Debug, Default)]
struct Track {
    /// Time of the last use.
    last: u64,
    uses: u64,
    /// Welford's running mean and sum of squares of the distances seen.
    mean: f64,
    m2: f64,
    ema: f64,
}

impl Track {
    /// A new distance `d`: into the EMA unless it is an outlier, then into the mean.
    fn add(&mut self, d: f64) {
        let n = self.uses - 2; // distances seen before this one (the first comes with the second use)
        if n == 0 {
            self.ema = d;
        } else {
            let sd = if n > 1 { (self.m2 / (n - 1) as f64).sqrt() } else { 0.0 };
            // (Distances that were all equal so far give no spread to judge by.)
            if n < 2 || sd == 0.0 || d <= self.mean + 3.0 * sd {
                self.ema = 0.9 * self.ema + 0.1 * d;
            }
        }
        let delta = d - self.mean;
        self.mean += delta / (n + 1) as f64;
        self.m2 += delta * (d - self.mean);
    }

    fn distance(&self) -> Option<f64> {
        (self.uses > 1).then_some(self.ema)
    }
}

/// A Fenwick tree over time: 1 at each key's last use, so the distinct keys used in a span
/// of time are a range sum.
struct Fenwick(Vec<u32>);

impl Fenwick {
    fn add(&mut self, t: u64, v: i32) {
        let mut i = t as usize + 1;
        while i < self.0.len() {
            self.0[i] = self.0[i].wrapping_add_signed(v);
            i += i & i.wrapping_neg();
        }
    }

    /// Sum over times `0..t`.
    fn prefix(&self, t: u64) -> u64 {
        let (mut i, mut s) = (t as usize, 0u64);
        while i > 0 {
            s += u64::from(self.0[i]);
            i -= i & i.wrapping_neg();
        }
        s
    }
}

/// One granularity's tracks.
struct Level {
    shift: u32,
    tracks: HashMap<u64, Track>,
    tree: Option<Fenwick>,
}

impl Level {
    fn new(shift: u32, how: Distance, limit: u64) -> Level {
        let tree = (how == Distance::Distinct).then(|| Fenwick(vec![0; limit as usize + 1]));
        Level { shift, tracks: HashMap::new(), tree }
    }

    #[inline]
    fn touch(&mut self, va: u64, t: u64) {
        let key = va >> self.shift;
        let tr = self.tracks.entry(key).or_default();
        tr.uses += 1;
        if tr.uses > 1 {
            let last = tr.last;
            let d = match &mut self.tree {
                // (Keys whose last use falls strictly between the two uses.)
                Some(f) => {
                    let d = f.prefix(t) - f.prefix(last + 1);
                    f.add(last, -1);
                    d
                }
                None => t - last - 1,
            };
            tr.add(d as f64);
        }
        if let Some(f) = &mut self.tree {
            f.add(t, 1);
        }
        tr.last = t;
    }
}

/// The reuse of every 4 KB page in the first `limit` data references of `src` after its first
/// `skip` references (all of them if `limit` is 0, which [`Distance::Distinct`] does not allow:
/// its tree is sized by it), sorted by page. The skipped references are those `xlat run --skip`
/// drops (every kind counted, `skip / streams` rounded up from each stream), so both look at
/// the same stretch of a program.
pub fn reuse(src: &mut dyn RefSource, skip: u64, limit: u64, how: Distance) -> Result<Vec<PageReuse>, SourceError> {
    assert!(limit > 0 || how == Distance::Accesses, "stack distances need a reference limit");
    let limit = if limit == 0 { u64::MAX } else { limit };
    let cap = if how == Distance::Distinct { limit } else { 0 };
    let mut levels = [Level::new(12, how, cap), Level::new(21, how, cap), Level::new(30, how, cap)];
    let mut buf = Vec::with_capacity(1 << 14);
    let mut live = vec![true; src.streams()];
    let mut t = 0u64;
    let mut to_skip = vec![skip.div_ceil(src.streams().max(1) as u64); src.streams()];
    'all: while live.iter().any(|&l| l) {
        for (s, alive) in live.iter_mut().enumerate() {
            if !*alive {
                continue;
            }
            src.next_batch(s, &mut buf)?;
            *alive = !buf.is_empty();
            let dropped = to_skip[s].min(buf.len() as u64) as usize;
            to_skip[s] -= dropped as u64;
            for r in &buf[dropped..] {
                if r.is_os_call() || r.kind() == RefKind::Fetch {
                    continue;
                }
                if t == limit {
                    break 'all;
                }
                for l in &mut levels {
                    l.touch(r.va, t);
                }
                t += 1;
            }
        }
    }
    let [pages, mb2, gb1] = &levels;
    let dist = |l: &Level, va: u64| l.tracks.get(&(va >> l.shift)).and_then(Track::distance);
    let mut out: Vec<PageReuse> = pages
        .tracks
        .iter()
        .map(|(&page, tr)| {
            let va = page << 12;
            PageReuse { page, accesses: tr.uses, d4k: tr.distance(), d2m: dist(mb2, va), d1g: dist(gb1, va) }
        })
        .collect();
    out.sort_unstable_by_key(|p| p.page);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use xlat_core::{Ref, VecSource};

    const MB2: u64 = 2 << 20;

    fn run(vas: &[u64], how: Distance) -> Vec<PageReuse> {
        let refs = vas.iter().map(|&va| Ref::load(va, 1)).collect();
        reuse(&mut VecSource::new(vec![refs], vec![]), 0, vas.len() as u64, how).unwrap()
    }

    /// The first `skip` references are left out: A B A C A after two is A C A.
    #[test]
    fn skipped_references_are_not_counted() {
        let (a, b, c) = (0, 0x1000, MB2);
        let refs = [a, b, a, c, a].iter().map(|&va| Ref::load(va, 1)).collect();
        let r = reuse(&mut VecSource::new(vec![refs], vec![]), 2, 3, Distance::Accesses).unwrap();
        assert_eq!(r.iter().map(|p| (p.page, p.accesses)).collect::<Vec<_>>(), vec![(0, 2), (MB2 >> 12, 1)]);
        assert_eq!(r[0].d4k, Some(1.0));
    }

    /// A worked example: pages A, B of one 2 MB region, C of another. A B A C A: A's
    /// distances are 1 (B) and 1 (C); B and C are used once; region 0's uses are 0 apart
    /// (A B A), then 1 (C); region 1 is used once.
    #[test]
    fn distances_count_the_references_to_other_pages_in_between() {
        let (a, b, c) = (0, 0x1000, MB2);
        let r = run(&[a, b, a, c, a], Distance::Accesses);
        let by = |va: u64| *r.iter().find(|p| p.page == va >> 12).unwrap();
        assert_eq!((by(a).accesses, by(a).d4k), (3, Some(1.0)));
        assert_eq!((by(b).d4k, by(c).d4k), (None, None));
        // Region 0: distances 0, 0, 1 -> EMA 0, 0, 0.1.
        assert!((by(a).d2m.unwrap() - 0.1).abs() < 1e-12);
        assert_eq!(by(b).d2m, by(a).d2m);
        assert_eq!(by(c).d2m, None);
        assert_eq!(by(a).d1g, Some(0.0));
    }

    /// Stack distance counts distinct pages: A B B B A is 3 references apart but 1 page.
    #[test]
    fn stack_distance_counts_distinct_pages() {
        let (a, b) = (0, 0x1000);
        let acc = run(&[a, b, b, b, a], Distance::Accesses);
        let st = run(&[a, b, b, b, a], Distance::Distinct);
        assert_eq!(acc[0].d4k, Some(3.0));
        assert_eq!(st[0].d4k, Some(1.0));
        assert_eq!(st[1].d4k, Some(0.0), "B B: nothing in between");
    }

    /// Against a brute-force model: the stack distance of every reuse, on a random stream.
    #[test]
    fn stack_distances_match_a_brute_force_model() {
        let mut x = 12345u64;
        let vas: Vec<u64> = (0..3000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % 40) << 12
            })
            .collect();
        let got = run(&vas, Distance::Distinct);
        for p in got {
            let uses: Vec<usize> = (0..vas.len()).filter(|&i| vas[i] >> 12 == p.page).collect();
            let mut tr = Track::default();
            for (k, w) in uses.windows(2).enumerate() {
                let distinct: std::collections::HashSet<u64> = vas[w[0] + 1..w[1]].iter().map(|v| v >> 12).filter(|&q| q != p.page).collect();
                tr.uses = k as u64 + 2;
                tr.add(distinct.len() as f64);
            }
            tr.uses = uses.len() as u64;
            assert_eq!(p.d4k, tr.distance(), "page {}", p.page);
        }
    }

    /// The EMA skips a distance far above the page's habit (3 standard deviations).
    #[test]
    fn outliers_are_skipped() {
        let mut tr = Track::default();
        for (i, d) in [10.0, 12.0, 10.0, 11.0, 1000.0].into_iter().enumerate() {
            tr.uses = i as u64 + 2;
            tr.add(d);
        }
        let ema = ((10.0 * 0.9 + 1.2) * 0.9 + 1.0) * 0.9 + 1.1;
        assert!((tr.ema - ema).abs() < 1e-9, "{} vs {ema}", tr.ema);
    }

    /// The paper's classes at 1024.
    #[test]
    fn classes() {
        assert_eq!(Class::of(Some(10.0), None, 1024.0), Class::TlbFriendly);
        assert_eq!(Class::of(Some(5000.0), Some(100.0), 1024.0), Class::Hub);
        assert_eq!(Class::of(None, Some(1023.0), 1024.0), Class::Hub);
        assert_eq!(Class::of(Some(5000.0), Some(1024.0), 1024.0), Class::LowReuse);
        assert_eq!(Class::of(None, None, 1024.0), Class::LowReuse);
    }
}
