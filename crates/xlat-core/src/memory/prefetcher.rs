//! Hardware data prefetchers: a small table of the pages a cache saw recently, each with the
//! line it last saw and the pattern between them. Once a pattern repeats, the prefetcher names
//! the next `degree` lines along it. Lines stay within the 4 KB physical page of the access
//! that trained it, as real prefetchers do: a line in the same page needs no translation.
//!
//! Two patterns (`cache.<c>.prefetcher`):
//! - `stride`: the same line stride twice in a row (+3, +3) fetches `+3 x 1..=degree`. Real
//!   L1D stride prefetchers key on the load's instruction address; references carry none, so
//!   this one keys on the page.
//! - `stream`: two short steps in one direction (ascending or descending, at most
//!   [`STREAM_WINDOW`] lines each) fetch the next `degree` adjacent lines that way. A longer
//!   jump starts over, so scattered accesses to one page do not look like a stream.

use crate::param::Prefetcher as Kind;

use crate::param::{component, Limit};

component! {
    /// A cache's data prefetcher (`cache.l1d.*`, `cache.l2.*`).
    CachePrefetchParams {
        prefetcher: crate::param::Prefetcher = crate::param::Prefetcher::None; "prefetcher"; None; "{} data prefetcher: none, stride (a repeated line stride within a 4 KB page; IP-less) or stream (ascending or descending lines of a page), trained on demand data accesses (an L1D's: loads and stores; an L2's: those that miss the L1D); prefetches stay within the 4 KB page, so they need no translation; an L2 prefetcher fills L2 and, from DRAM, the LLC";
        degree: u64 = 2; "prefetch_degree"; Some(Limit::Int(16)); "lines the {} prefetcher fetches ahead once it has seen a pattern twice";
    }
}

/// Pages tracked at once.
const PAGES: usize = 16;
/// Most lines one access may prefetch (`cache.<c>.prefetch_degree` is at most this).
const MAX_DEGREE: usize = 16;
const LINES_PER_PAGE: i64 = 64;
/// The longest step a stream may take, in lines.
pub const STREAM_WINDOW: i64 = 4;

#[derive(Clone, Copy, Default)]
struct Track {
    /// 4 KB page number + 1 (0: unused).
    page: u64,
    /// Line within the page last seen.
    last: i64,
    /// The step last seen (stride in lines; for streams, the direction).
    step: i64,
    /// The step repeated.
    confirmed: bool,
    /// Last use, for LRU replacement.
    stamp: u64,
}

/// The lines an access names to prefetch: `left` more, from `next` on, `step` lines apart.
#[derive(Clone, Copy, Debug)]
pub struct Lines {
    next: u64,
    step: i64,
    left: usize,
}

impl Lines {
    const NONE: Lines = Lines { next: 0, step: 0, left: 0 };

    /// The next `degree` lines from `line` along `step` (not 0), as many as stay in its page.
    fn along(line: u64, step: i64, degree: usize) -> Lines {
        let at = (line % LINES_PER_PAGE as u64) as i64;
        let room = if step > 0 { (LINES_PER_PAGE - 1 - at) / step } else { at / -step };
        Lines { next: line.wrapping_add_signed(step), step, left: degree.min(room as usize) }
    }
}

impl Iterator for Lines {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        if self.left == 0 {
            return None;
        }
        let line = self.next;
        self.next = line.wrapping_add_signed(self.step);
        self.left -= 1;
        Some(line)
    }
}

pub struct Prefetch {
    kind: Kind,
    degree: usize,
    tracks: [Track; PAGES],
    clock: u64,
    /// The track used last: a stream trains on one page many times in a row, so it is asked
    /// first (a page is in one track at most, so the answer is the search's).
    recent: usize,
}

impl Prefetch {
    pub fn new(kind: Kind, degree: u64) -> Prefetch {
        Prefetch { kind, degree: (degree as usize).min(MAX_DEGREE), tracks: [Track::default(); PAGES], clock: 0, recent: 0 }
    }

    pub fn enabled(&self) -> bool {
        self.kind != Kind::None
    }

    /// Learn from an access to `line`; returns the lines to prefetch.
    pub fn train(&mut self, line: u64) -> Lines {
        if self.kind == Kind::None {
            return Lines::NONE;
        }
        self.clock += 1;
        let (page, at) = (line / LINES_PER_PAGE as u64 + 1, (line % LINES_PER_PAGE as u64) as i64);
        let found = if self.tracks[self.recent].page == page { Some(self.recent) } else { self.tracks.iter().position(|t| t.page == page) };
        let Some(i) = found else {
            let lru = (0..PAGES).min_by_key(|&i| self.tracks[i].stamp).expect("PAGES > 0");
            self.tracks[lru] = Track { page, last: at, step: 0, confirmed: false, stamp: self.clock };
            self.recent = lru;
            return Lines::NONE;
        };
        self.recent = i;
        let t = &mut self.tracks[i];
        t.stamp = self.clock;
        if at == t.last {
            return Lines::NONE;
        }
        let step = match self.kind {
            Kind::Stream if (at - t.last).abs() > STREAM_WINDOW => 0,
            Kind::Stream => (at - t.last).signum(),
            _ => at - t.last,
        };
        t.confirmed = step != 0 && step == t.step;
        t.step = step;
        t.last = at;
        if !t.confirmed {
            return Lines::NONE;
        }
        Lines::along(line, step, self.degree)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(kind: Kind, degree: u64, lines: &[u64]) -> Vec<Vec<u64>> {
        let mut p = Prefetch::new(kind, degree);
        lines.iter().map(|&l| p.train(l).collect()).collect()
    }

    /// `Lines::along` names what stepping one line at a time and stopping at the page's edge
    /// names, for every line of a page, step and degree.
    #[test]
    fn lines_along_a_step_stop_at_the_page() {
        for line in 192..256u64 {
            for step in (-70..=70i64).filter(|&s| s != 0) {
                for degree in 1..=MAX_DEGREE {
                    let mut want = vec![];
                    for k in 1..=degree as i64 {
                        let next = line as i64 + step * k;
                        if next / 64 != line as i64 / 64 {
                            break;
                        }
                        want.push(next as u64);
                    }
                    assert_eq!(Lines::along(line, step, degree).collect::<Vec<_>>(), want, "{line} {step} {degree}");
                }
            }
        }
    }

    #[test]
    fn a_stride_seen_twice_prefetches_along_it_within_the_page() {
        // Page 2 (lines 128..192): +3, +3, then +3 again.
        let got = run(Kind::Stride, 2, &[130, 133, 136, 139]);
        assert_eq!(got, vec![vec![], vec![], vec![139, 142], vec![142, 145]]);
        // A changed stride must repeat before it prefetches again.
        assert_eq!(run(Kind::Stride, 2, &[130, 133, 136, 140, 144])[3..], [vec![], vec![148, 152]]);
        // Never past the page's last line (191), nor below its first (128).
        assert_eq!(run(Kind::Stride, 4, &[185, 187, 189])[2], vec![191]);
        assert_eq!(run(Kind::Stride, 4, &[133, 131, 129])[2], Vec::<u64>::new());
        // Repeats of one line teach nothing.
        assert_eq!(run(Kind::Stride, 2, &[130, 130, 130, 130]), vec![Vec::<u64>::new(); 4]);
    }

    #[test]
    fn a_stream_prefetches_adjacent_lines_in_its_direction() {
        assert_eq!(run(Kind::Stream, 3, &[64, 66, 69])[2], vec![70, 71, 72]);
        assert_eq!(run(Kind::Stream, 2, &[100, 98, 95])[2], vec![94, 93]);
        // Jumps longer than the window are no stream, however they line up.
        assert_eq!(run(Kind::Stream, 2, &[64, 70, 76, 82]), vec![Vec::<u64>::new(); 4]);
        assert_eq!(run(Kind::Stream, 2, &[64, 70, 71, 72])[3], vec![73, 74]);
        assert_eq!(run(Kind::None, 2, &[64, 65, 66, 67]), vec![Vec::<u64>::new(); 4]);
    }

    #[test]
    fn pages_are_tracked_apart_and_the_least_recent_is_forgotten() {
        let mut p = Prefetch::new(Kind::Stream, 1);
        // Interleaved streams in two pages each prefetch.
        let mut got: Vec<Vec<u64>> = vec![];
        for l in [0, 64, 1, 65, 2, 66] {
            got.push(p.train(l).collect());
        }
        assert_eq!(got[4..], [vec![3], vec![67]]);
        // Sixteen other pages push page 0 out: its stream starts over.
        for pg in 2..18u64 {
            p.train(pg * 64);
        }
        assert_eq!(p.train(3).count(), 0);
        assert_eq!(p.train(4).count(), 0);
        assert_eq!(p.train(5).count(), 1);
    }
}
