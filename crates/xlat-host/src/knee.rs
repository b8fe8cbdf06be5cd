//! Knees of a latency-versus-pages curve.
//!
//! A pointer chase over more pages than a TLB level holds pays that level's miss on nearly
//! every access, so its curve is a staircase: flat while the pages fit, a sharp rise over a
//! fraction of an octave once they stop fitting, then flat again (plateau). Data caches bend
//! the curve too, but gently (one line per page, and the cache ramps span an octave or more),
//! which is what tells them apart: a *step* here is a rise of at least [`Params::min_step`]
//! made of single-point rises of at least [`Params::min_rise`] each, with at most one quieter
//! point in between, that lasts (the points after it stay up). Its knee is the last point
//! before the rise (or before a smaller lift that starts it): the most pages that still fit.

/// Detection thresholds (relative to the latency, so they hold from 1 ns to 300 ns).
#[derive(Clone, Copy, Debug)]
pub struct Params {
    /// A point-to-point rise counts when the next point is this much higher (0.15 = +15%),
    /// or four times the curve's own point-to-point noise ([`noise`]), whichever is more.
    pub min_rise: f64,
    /// A step must rise at least this much in total (0.8 = +80%). Missing a TLB level adds a
    /// lookup in the next level or a walk to a chase whose data still hit in a cache, which
    /// about doubles or more its time per access; the data-cache ramps of the same curves
    /// rise 50-70% over an octave, in many small rises.
    pub min_step: f64,
}

impl Default for Params {
    fn default() -> Params {
        Params { min_rise: 0.15, min_step: 0.8 }
    }
}

/// One step of the staircase.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step {
    /// Index of the last point before the rise (the knee).
    pub knee: usize,
    /// Index of the first point at the top of the rise.
    pub top: usize,
    /// Pages at the knee: the largest size measured that still fits.
    pub fits: f64,
    /// Pages at the first point past the knee: the smallest size measured that no longer fits.
    pub overflows: f64,
    /// Latency at the knee and at the top of the rise.
    pub before: f64,
    pub after: f64,
}

impl Step {
    /// The reach estimate: the geometric middle of the last fitting and first overflowing size.
    pub fn reach(&self) -> f64 {
        (self.fits * self.overflows).sqrt()
    }
}

/// The curve's point-to-point relative noise. Neighbour ratios alone would count the gentle
/// cache ramps as noise, so this is the robust spread (1.4826 × median absolute value) of the
/// change between consecutive neighbour ratios, over √2: a smooth ramp changes its ratio
/// little, a jittery point changes two. Steps are few, so they barely move it.
pub fn noise(ys: &[f64]) -> f64 {
    let g: Vec<f64> = ys.windows(2).map(|w| w[1] / w[0] - 1.0).collect();
    let mut d: Vec<f64> = g.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
    if d.is_empty() {
        return 0.0;
    }
    1.4826 * median(&mut d) / std::f64::consts::SQRT_2
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

/// The steps of the curve `ys` over sizes `xs` (increasing, same length, positive), in order.
pub fn steps(xs: &[f64], ys: &[f64], p: Params) -> Vec<Step> {
    let n = xs.len().min(ys.len());
    if n < 2 || ys[..n].iter().any(|&y| !(y.is_finite() && y > 0.0)) {
        return Vec::new();
    }
    let sigma = noise(&ys[..n]);
    let rise = p.min_rise.max(4.0 * sigma);
    let rising = |i: usize| ys[i + 1] > ys[i] * (1.0 + rise);
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < n {
        if !rising(i) {
            i += 1;
            continue;
        }
        // The rise may begin with a smaller lift (a set-associative TLB starts to miss a
        // little before it is full): the knee is before it when it stands out of the noise.
        // It only moves a step already found by one point, so a lower bar (2σ) will do.
        let mut knee = i;
        let lift = (p.min_rise / 3.0).max(2.0 * sigma);
        if knee > 0 && ys[knee] > ys[knee - 1] * (1.0 + lift) && out.last().is_none_or(|s: &Step| s.top < knee - 1) {
            knee -= 1;
        }
        // Extend over further rises, bridging one quieter interval that does not drop.
        let mut top = i + 1;
        let mut j = i + 1;
        while j + 1 < n {
            if rising(j) {
                top = j + 1;
                j += 1;
            } else if j + 2 < n && ys[j + 1] >= ys[j] && rising(j + 1) {
                top = j + 2;
                j += 2;
            } else {
                break;
            }
        }
        let before = ys[knee];
        let after = ys[top];
        // It must last: every point up to two past the top stays above the middle of the rise.
        let floor = before * (1.0 + p.min_step / 2.0);
        let lasts = ys[top..n.min(top + 3)].iter().all(|&y| y >= floor);
        if after >= before * (1.0 + p.min_step) && lasts {
            out.push(Step { knee, top, fits: xs[knee], overflows: xs[knee + 1], before, after });
        }
        i = top;
    }
    out
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
        let s = steps(&xs, &ys, Params::default());
        assert_eq!(s.len(), 2, "{s:?}");
        assert_eq!(s[0].fits, 64.0);
        assert!(s[0].overflows > 64.0 && s[0].overflows < 80.0);
        assert_eq!(s[1].fits, 2048.0);
        assert_eq!((s[0].before, s[0].after), (1.0, 3.0));
        assert_eq!((s[1].before, s[1].after), (3.0, 23.0));
        assert!(s[1].reach() > 2048.0 && s[1].reach() < 2436.0);
    }

    #[test]
    fn noisy_steps_are_still_found_in_place() {
        let xs = sizes();
        let clean = stairs(&xs, 1.1, &[(72.0, 1.9), (3072.0, 15.0), (30000.0, 150.0)]);
        for seed in 0..20 {
            let ys = with_noise(&clean, 0.04, seed);
            let s = steps(&xs, &ys, Params::default());
            let fits: Vec<f64> = s.iter().map(|s| s.fits).collect();
            assert_eq!(s.len(), 3, "seed {seed}: {fits:?}");
            assert!((64.0..=72.0).contains(&fits[0]), "{fits:?}");
            assert!((2435.0..=3072.0).contains(&fits[1]), "{fits:?}");
            assert!((27000.0..=30000.0).contains(&fits[2]), "{fits:?}");
        }
    }

    #[test]
    fn a_rise_spread_over_neighbouring_points_is_one_step() {
        // A set-associative TLB starts to miss before it is full: the rise takes three points.
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
        let s = steps(&xs, &ys, Params::default());
        assert_eq!(s.len(), 1, "{s:?}");
        assert_eq!(s[0].fits, 2048.0);
        assert_eq!(s[0].after, 20.0);
    }

    #[test]
    fn a_gentle_cache_ramp_is_not_a_step() {
        // 3 ns doubling to 6 ns over 1.5 octaves in rises of ~12% (one line per page leaving
        // the L1D), then flat: the shape of a data-cache ramp.
        let xs = sizes();
        let ys: Vec<f64> = xs.iter().map(|&x| 3.0 * (x / 256.0).clamp(1.0, 2.83).powf(2f64.log(2.83))).collect();
        assert!(steps(&xs, &ys, Params::default()).is_empty());
    }

    #[test]
    fn a_spike_that_does_not_last_is_not_a_step() {
        let xs = sizes();
        let mut ys = vec![5.0; xs.len()];
        ys[20] = 15.0;
        assert!(steps(&xs, &ys, Params::default()).is_empty());
        ys[21] = 15.0;
        assert!(steps(&xs, &ys, Params::default()).is_empty(), "two high points, then back down");
    }

    #[test]
    fn flat_short_and_degenerate_curves_have_no_steps() {
        let xs = sizes();
        assert!(steps(&xs, &vec![2.0; xs.len()], Params::default()).is_empty());
        assert!(steps(&xs[..1], &[1.0], Params::default()).is_empty());
        assert!(steps(&xs, &[], Params::default()).is_empty());
        let mut bad = vec![2.0; xs.len()];
        bad[3] = f64::NAN;
        assert!(steps(&xs, &bad, Params::default()).is_empty());
    }

    #[test]
    fn a_step_at_the_last_point_counts() {
        let xs = sizes();
        let mut ys = vec![4.0; xs.len()];
        *ys.last_mut().unwrap() = 40.0;
        let s = steps(&xs, &ys, Params::default());
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].top, xs.len() - 1);
    }

    #[test]
    fn a_measured_zen4_guest_curve() {
        // Medians of three runs of the 4 KB chase on the AMD EPYC (Zen 4) KVM guest this was
        // written on, under load from other jobs: the L1 DTLB (72 entries) overflows between
        // 64 and 76 pages, the L2 DTLB between 2048 and 2435 (walks are 2D in a guest), the L1D
        // ramp at 256..861 pages is gentle, and past ~28K pages the walks' own lines leave the
        // caches (the knee is at 19,484: the next point already rises 10%, the one after 17%).
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
        let s = steps(&xs, &ys, Params::default());
        let fits: Vec<f64> = s.iter().map(|s| s.fits).collect();
        assert_eq!(fits, [64.0, 2048.0, 19484.0]);
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
