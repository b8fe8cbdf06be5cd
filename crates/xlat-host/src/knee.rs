//! Knees of a latency-versus-pages curve.
//!
//! A pointer chase over more pages than a TLB level holds pays that level's miss on nearly
//! every access, so its curve is a staircase: flat while the pages fit, a sharp rise over a
//! fraction of an octave once they stop fitting, then flat again (plateau). Data caches bend
//! the curve too (one line per page leaving the L1D, then the L2), and the steps are found in
//! what the TLBs add, not in the curve itself: the curve minus its control, a chase of as many
//! nodes at the same lines in about 1/64 as many pages ([`crate::chase::control_layout`]). The
//! two pay the same data-cache misses, and a TLB miss adds its lookup or walk to the access's
//! latency, so the difference is the TLBs' share in ns; a ratio would shrink the same TLB cost
//! as the data-cache part grows. Without a control, the curve minus its first point stands in
//! (its cache ramps then stay in it, and are told apart by their slope alone).
//!
//! The rule, in log2(pages) so that it does not depend on how densely the curve is sampled:
//!
//! - **A step** starts wherever what the TLBs add rises, within [`Params::width`] octaves (a
//!   quarter), by at least [`Params::min_step`] (80%) of the whole latency at the lower end.
//!   Missing a TLB level adds a lookup or a walk that about doubles the access or more, within
//!   a fraction of an octave; data-cache ramps rise 50-70% per octave, a sixth of that per
//!   quarter octave, and are gone from the difference anyway. Windows that overlap or touch
//!   are one step, from the first window's start `a` to the last one's end `b` (its top).
//! - **Its levels**: below, the median over the quarter octave up to `a`; above, the median
//!   over the quarter octave from `b`. Its middle is half-way between them.
//! - **Its knee**: `fits` is the last measured size below the middle, `overflows` the first
//!   at or above it, and `reach` where the curve crosses the middle, interpolated in
//!   log2(pages). Denser sampling moves `fits` and `overflows` closer to the crossing, never
//!   across it, so every density gives the same knee within one interval of the coarsest. A
//!   set-associative TLB starts to miss a little before it is full (a set overflows here and
//!   there): such a lift, below the middle, still "fits": most accesses still hit.
//! - **It lasts**: every point in the half octave from the crossing stays at or above the
//!   middle; a spike (a point or two the machine disturbed) is not a step.
//! - **A gradual step** is a rise of [`GRADUAL_STEP`] (150%) of the latency within an octave,
//!   where no sharp step is: a set-associative TLB whose misses come on over most of an octave
//!   (Zen 4's L2 DTLB in a KVM guest: what the TLBs add goes 2.2 -> 13.6 ns from 2,048 to 4,096
//!   pages, never 80% of the latency in a quarter octave). Its levels, knee and lasting are as
//!   above. Data-cache ramps, gone from the difference with the control, rise less than that
//!   in an octave without it.

/// Detection thresholds (relative to the latency, so they hold from 1 ns to 300 ns).
#[derive(Clone, Copy, Debug)]
pub struct Params {
    /// What the TLBs add must rise by this much of the latency (0.8 = 80%) within
    /// [`Params::width`].
    pub min_step: f64,
    /// The window a step must rise within, in octaves of pages (0.25: a quarter octave, one
    /// interval of the default four sizes per octave).
    pub width: f64,
}

impl Default for Params {
    fn default() -> Params {
        Params { min_step: 0.8, width: 0.25 }
    }
}

/// How long a step must last, in octaves past its middle.
const LASTS: f64 = 0.5;

/// A gradual step rises by this much of the latency (1.5 = 150%) ...
pub const GRADUAL_STEP: f64 = 1.5;
/// ... within this many octaves.
pub const GRADUAL_WIDTH: f64 = 1.0;

/// One step of the staircase.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step {
    /// Index of the last point below the step's middle (the knee).
    pub knee: usize,
    /// Index of the end of the rise: the end of the last window that rose enough.
    pub top: usize,
    /// Pages at the knee: the largest size measured whose TLB cost is below the step's middle.
    pub fits: f64,
    /// Pages at the first point at or above the middle: the smallest size measured that does
    /// not fit.
    pub overflows: f64,
    /// The latency levels below and above the step (medians over a quarter octave each).
    pub before: f64,
    pub after: f64,
    /// Pages where the TLB cost crosses the step's middle, interpolated in log2(pages).
    pub reach: f64,
}

/// The median (the mean of the two middle values for an even count); NaN when empty.
pub fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The steps of the curve `ys` over sizes `xs` (increasing, positive), in order, found in
/// `ys` minus `control` (the control chase's curve at the same sizes) or, without one, in `ys`
/// minus its first point: the sharp ones (`p`), and the gradual ones where no sharp step is.
/// A curve with a point that is not a positive number has no steps.
pub fn steps(xs: &[f64], ys: &[f64], control: Option<&[f64]>, p: Params) -> Vec<Step> {
    let n = xs.len().min(ys.len()).min(control.map_or(usize::MAX, <[f64]>::len));
    let positive = |v: &[f64]| v[..n].iter().all(|&y| y.is_finite() && y > 0.0);
    if n < 2 || !positive(xs) || !positive(ys) || !control.is_none_or(positive) || xs[..n].windows(2).any(|w| w[1] <= w[0]) {
        return Vec::new();
    }
    let u: Vec<f64> = xs[..n].iter().map(|x| x.log2()).collect();
    let tlb: Vec<f64> = match control {
        Some(c) => (0..n).map(|i| ys[i] - c[i]).collect(),
        None => (0..n).map(|i| ys[i] - ys[0]).collect(),
    };
    let curve = Sampled { xs: &xs[..n], ys: &ys[..n], u: &u, tlb: &tlb, level_width: p.width };
    let mut found = curve.pass(p);
    let gradual = curve.pass(Params { min_step: GRADUAL_STEP, width: GRADUAL_WIDTH });
    for (g, step) in gradual {
        if !found.iter().any(|(f, _)| g.0 <= f.1 && f.0 <= g.1) {
            found.push((g, step));
        }
    }
    found.sort_by_key(|(span, _)| span.0);
    found.into_iter().map(|(_, s)| s).collect()
}

/// A curve with what the TLBs add, in log2(pages).
struct Sampled<'a> {
    xs: &'a [f64],
    ys: &'a [f64],
    u: &'a [f64],
    tlb: &'a [f64],
    /// The window of a step's levels, in octaves.
    level_width: f64,
}

impl Sampled<'_> {
    /// The steps that rise by `p.min_step` of the latency within `p.width` octaves, each with
    /// the span of points it rose over.
    fn pass(&self, p: Params) -> Vec<((usize, usize), Step)> {
        let (xs, ys, u, tlb) = (self.xs, self.ys, self.u, self.tlb);
        let n = xs.len();
        // Sizes are rounded to whole pages, so a window may be a little shorter or longer than
        // its width: a tenth of it either way is the same window.
        let slack = 0.1 * p.width;
        let ahead = |i: usize| (i + 1..n).find(|&j| u[j] - u[i] >= p.width - slack);
        let rises = |i: usize| ahead(i).is_some_and(|j| tlb[j] - tlb[i] >= p.min_step * ys[i]);
        let lw = self.level_width;
        let ls = 0.1 * lw;
        let level = |v: &[f64], from: f64, to: f64| median(&mut (0..n).filter(|&k| u[k] >= from - ls && u[k] <= to + ls).map(|k| v[k]).collect::<Vec<_>>());
        let mut out = Vec::new();
        let mut i = 0;
        while i < n {
            if !rises(i) {
                i += 1;
                continue;
            }
            let a = i;
            let mut b = ahead(a).unwrap_or(n - 1);
            let mut k = a + 1;
            while k <= b && k < n {
                if rises(k) {
                    b = b.max(ahead(k).unwrap_or(n - 1));
                }
                k += 1;
            }
            let below = level(tlb, u[a] - lw, u[a]);
            let above = level(tlb, u[b], u[b] + lw);
            let middle = (below + above) / 2.0;
            let cross = (a + 1..=b).find(|&k| tlb[k] >= middle).unwrap_or(b);
            let lasts = (cross..n).take_while(|&k| u[k] <= u[cross] + LASTS + ls).all(|k| tlb[k] >= middle);
            if lasts && above > below {
                let knee = cross - 1;
                let t = ((middle - tlb[knee]) / (tlb[cross] - tlb[knee])).clamp(0.0, 1.0);
                out.push((
                    (a, b),
                    Step {
                        knee,
                        top: b,
                        fits: xs[knee],
                        overflows: xs[cross],
                        before: level(ys, u[a] - lw, u[a]),
                        after: level(ys, u[b], u[b] + lw),
                        reach: (u[knee] + t * (u[cross] - u[knee])).exp2(),
                    },
                ));
            }
            i = b;
        }
        out
    }
}

/// The level of the plateau from point `from` up to (not including) `to`: their median.
pub fn plateau(ys: &[f64], from: usize, to: usize) -> f64 {
    let to = to.min(ys.len());
    if from >= to {
        return f64::NAN;
    }
    median(&mut ys[from..to].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    /// Sizes 8..65536, four per octave, as the probe measures them.
    fn sizes() -> Vec<f64> {
        (0..=52).map(|k| 8.0 * 2f64.powf(k as f64 / 4.0)).collect()
    }

    /// A staircase: `base` ns, plus `h` ns for each (reach, h) once the size exceeds the reach.
    fn stairs(xs: &[f64], base: f64, levels: &[(f64, f64)]) -> Vec<f64> {
        xs.iter().map(|&x| base + levels.iter().filter(|(r, _)| x > *r).map(|(_, h)| h).sum::<f64>()).collect()
    }

    fn with_noise(ys: &[f64], rel: f64, seed: u64) -> Vec<f64> {
        let mut r = Rng::new(seed);
        ys.iter().map(|y| y * (1.0 + rel * (2.0 * (r.next_u64() as f64 / u64::MAX as f64) - 1.0))).collect()
    }

    #[test]
    fn two_clean_steps_are_the_two_reaches() {
        let xs = sizes();
        let ys = stairs(&xs, 1.0, &[(64.0, 2.0), (2048.0, 20.0)]);
        let s = steps(&xs, &ys, None, Params::default());
        assert_eq!(s.len(), 2, "{s:?}");
        assert_eq!(s[0].fits, 64.0);
        assert!(s[0].overflows > 64.0 && s[0].overflows < 80.0);
        assert_eq!(s[1].fits, 2048.0);
        assert_eq!((s[0].before, s[0].after), (1.0, 3.0));
        assert_eq!((s[1].before, s[1].after), (3.0, 23.0));
        assert!(s[1].reach > 2048.0 && s[1].reach < 2436.0);
    }

    #[test]
    fn noisy_steps_are_still_found_in_place() {
        let xs = sizes();
        let clean = stairs(&xs, 1.1, &[(72.0, 1.9), (3072.0, 15.0), (30000.0, 150.0)]);
        for seed in 0..20 {
            let ys = with_noise(&clean, 0.04, seed);
            let s = steps(&xs, &ys, None, Params::default());
            let fits: Vec<f64> = s.iter().map(|s| s.fits).collect();
            assert_eq!(s.len(), 3, "seed {seed}: {fits:?}");
            assert!((64.0..=72.0).contains(&fits[0]), "{fits:?}");
            assert!((2435.0..=3072.0).contains(&fits[1]), "{fits:?}");
            assert!((27000.0..=30000.0).contains(&fits[2]), "{fits:?}");
        }
    }

    #[test]
    fn a_rise_spread_over_neighbouring_points_is_one_step_its_knee_below_its_middle() {
        // A set-associative TLB starts to miss before it is full: the rise takes three points,
        // the first a lift of 20% (a few accesses walk). Most accesses still hit at 2435 pages,
        // below the middle of 6 -> 20 ns: it still fits, and 2896 (13 ns) does not.
        let xs = sizes();
        let ys: Vec<f64> = xs
            .iter()
            .map(|&x| {
                if x <= 2048.0 {
                    6.0
                } else if x < 2500.0 {
                    7.2
                } else if x < 3000.0 {
                    13.0
                } else {
                    20.0
                }
            })
            .collect();
        let s = steps(&xs, &ys, None, Params::default());
        assert_eq!(s.len(), 1, "{s:?}");
        assert_eq!((s[0].fits.round(), s[0].overflows.round()), (2435.0, 2896.0));
        // Above: the median of the quarter octave from the top of the last window that rose 80%.
        assert_eq!((s[0].before, s[0].after), (6.6, 16.5));
    }

    /// A smooth step of `h` ns centred at `at` pages (half of it there), `w` octaves wide.
    fn smooth(x: f64, at: f64, h: f64, w: f64) -> f64 {
        h / (1.0 + (-(x / at).log2() / w * 4.0).exp())
    }

    #[test]
    fn the_knee_is_the_same_at_every_density() {
        // Zen 1's shape: the L1 DTLB's sharp step at 64 pages, the L1D ramp over 256..1024 pages
        // (which the control carries too), the L2 DTLB's step over a quarter octave centred at
        // 1,330 pages, walks slowly dearer after it. Sampled at 4, 8 and 16 sizes per octave,
        // with 3% noise on each point, the knee interval at 4 per octave holds the crossing at
        // every density, and each density's knee lies within one interval of 4 per octave.
        let control = |x: f64| 1.7 + 3.3 * ((x / 256.0).log2() / 2.0).clamp(0.0, 1.0);
        let chase = |x: f64| control(x) + smooth(x, 69.0, 3.4, 0.05) + smooth(x, 1330.0, 26.0, 0.25) + 10.0 * ((x / 1330.0).log2() / 2.0).clamp(0.0, 1.0);
        for seed in 0..10 {
            let mut found = Vec::new();
            for po in [4, 8, 16] {
                let xs: Vec<f64> = crate::probe::sizes(8, 65536, po).into_iter().map(|x| x as f64).collect();
                let ys = with_noise(&xs.iter().map(|&x| chase(x)).collect::<Vec<_>>(), 0.03, seed * 3 + po as u64);
                let cs = with_noise(&xs.iter().map(|&x| control(x)).collect::<Vec<_>>(), 0.03, seed * 7 + po as u64);
                let s = steps(&xs, &ys, Some(&cs), Params::default());
                assert_eq!(s.len(), 2, "seed {seed}, {po} per octave: {s:?}");
                found.push((po, s));
            }
            let coarse = found[0].1.clone();
            for (po, s) in &found {
                for (a, c) in s.iter().zip(&coarse) {
                    assert!(
                        a.reach > c.fits && a.reach <= c.overflows,
                        "seed {seed}, {po} per octave: crossing {:.0} outside {}..{}",
                        a.reach,
                        c.fits,
                        c.overflows
                    );
                    assert!(
                        a.fits >= c.fits / 2f64.powf(0.25) - 1.0 && a.overflows <= c.overflows * 2f64.powf(0.25) + 1.0,
                        "seed {seed}, {po} per octave: {a:?} against {c:?}"
                    );
                }
            }
            let l2: Vec<f64> = found.iter().map(|(_, s)| s[1].fits).collect();
            assert!(l2.iter().all(|f| (1116.0..1448.0).contains(f)), "seed {seed}: {l2:?}");
        }
    }

    #[test]
    fn a_data_cache_step_in_the_control_is_not_a_knee() {
        // The control of a measured 4 KB chase on Zen 1 (tests/data/zen1-kvm-po4.json, median
        // of three runs, from 8,192 nodes): past 27,554 nodes (1.7 MB of lines) the data leave
        // what this guest gets of the L3, and it rises 145% within a quarter octave, as steeply
        // as a TLB step. A chase whose TLBs add only the L1 DTLB miss here (2 MB pages, all held
        // by the L2 DTLB) pays that rise too; without the control it is a knee.
        let xs = [8192.0, 9742.0, 11585.0, 13777.0, 16384.0, 19484.0, 23170.0, 27554.0, 32768.0, 38968.0, 46341.0, 55109.0, 65536.0];
        let control = [10.83, 12.05, 14.47, 14.88, 15.89, 16.43, 17.32, 28.47, 69.64, 103.30, 110.0, 119.12, 129.03];
        let chase: Vec<f64> = control.iter().map(|c| c + 3.4).collect();
        let without = steps(&xs, &chase, None, Params::default());
        assert_eq!(without.iter().map(|s| s.fits).collect::<Vec<_>>(), [27554.0], "{without:?}");
        assert!(steps(&xs, &chase, Some(&control), Params::default()).is_empty());
    }

    #[test]
    fn a_gentle_cache_ramp_is_not_a_step() {
        // 3 ns doubling to 6 ns over 1.5 octaves in rises of ~12% (one line per page leaving
        // the L1D), then flat: the shape of a data-cache ramp.
        let xs = sizes();
        let ys: Vec<f64> = xs.iter().map(|&x| 3.0 * (x / 256.0).clamp(1.0, 2.83).powf(2f64.log(2.83))).collect();
        assert!(steps(&xs, &ys, None, Params::default()).is_empty());
    }

    #[test]
    fn a_spike_that_does_not_last_is_not_a_step() {
        let xs = sizes();
        let mut ys = vec![5.0; xs.len()];
        ys[20] = 15.0;
        assert!(steps(&xs, &ys, None, Params::default()).is_empty());
        ys[21] = 15.0;
        assert!(steps(&xs, &ys, None, Params::default()).is_empty(), "two high points, then back down");
    }

    #[test]
    fn flat_short_and_degenerate_curves_have_no_steps() {
        let xs = sizes();
        assert!(steps(&xs, &vec![2.0; xs.len()], None, Params::default()).is_empty());
        assert!(steps(&xs[..1], &[1.0], None, Params::default()).is_empty());
        assert!(steps(&xs, &[], None, Params::default()).is_empty());
        let mut bad = vec![2.0; xs.len()];
        bad[3] = f64::NAN;
        assert!(steps(&xs, &bad, None, Params::default()).is_empty());
    }

    #[test]
    fn a_step_at_the_last_point_counts() {
        let xs = sizes();
        let mut ys = vec![4.0; xs.len()];
        *ys.last_mut().unwrap() = 40.0;
        let s = steps(&xs, &ys, None, Params::default());
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].top, xs.len() - 1);
    }

    #[test]
    fn a_measured_zen4_guest_curve() {
        // Medians of three runs of the 4 KB chase on an AMD EPYC (Zen 4) KVM guest under load
        // from other jobs: the L1 DTLB (72 entries) overflows between 64 and 76 pages, the L2
        // DTLB (3,072) from 2,435 pages on (walks are 2D in a guest), the L1D
        // ramp at 256..861 pages is gentle, and past ~28K pages the walks' own lines leave the
        // caches. No control was recorded (the curve minus its first point stands in). At 2,435
        // pages a few accesses already walk (+10%), most still hit: the L2 knee is 2,435 fit,
        // 2,896 (half-way up) do not; the walk plateau's, 27,554 fit (71 ns), 32,768 do not
        // (164 ns, past the middle of 65 -> 257 ns).
        let xs = [
            8, 10, 11, 13, 16, 19, 23, 27, 32, 38, 45, 54, 64, 76, 91, 108, 128, 152, 181, 215, 256, 304, 362, 431, 512, 609, 724, 861, 1024, 1218, 1448, 1722,
            2048, 2435, 2896, 3444, 4096, 4871, 5793, 6889, 8192, 9742, 11585, 13777, 16384, 19484, 23170, 27554, 32768, 38968, 46341, 55109, 65536,
        ]
        .map(|x| x as f64);
        let ys = [
            1.08, 1.08, 1.08, 1.08, 1.08, 1.08, 1.08, 1.08, 1.08, 1.08, 1.08, 1.11, 1.08, 2.58, 2.98, 2.98, 2.98, 2.98, 2.98, 3.1, 3.13, 3.43, 3.83, 4.22,
            4.55, 5.29, 5.55, 5.9, 5.96, 5.98, 6.08, 6.01, 6.0, 6.62, 13.03, 17.84, 20.75, 23.53, 27.4, 33.95, 39.98, 43.87, 45.29, 50.42, 54.61, 55.47, 60.8,
            71.19, 164.19, 324.78, 191.52, 268.61, 279.88,
        ];
        let s = steps(&xs, &ys, None, Params::default());
        let fits: Vec<f64> = s.iter().map(|s| s.fits).collect();
        assert_eq!(fits, [64.0, 2435.0, 27554.0]);
    }

    #[test]
    fn medians_and_plateaus() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&mut []).is_nan());
        assert_eq!(plateau(&[1.0, 9.0, 10.0, 11.0, 50.0], 1, 4), 10.0);
        assert!(plateau(&[1.0], 1, 1).is_nan());
    }
}
