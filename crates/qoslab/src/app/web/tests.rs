use super::*;

/// Kolmogorov–Smirnov distance between the sample `xs` and the distribution function
/// `cdf` (continuous: both sides of every step).
fn ks(xs: &mut [f64], cdf: impl Fn(f64) -> f64) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len() as f64;
    let mut d: f64 = 0.0;
    for (i, &x) in xs.iter().enumerate() {
        let f = cdf(x);
        d = d
            .max((f - i as f64 / n).abs())
            .max(((i + 1) as f64 / n - f).abs());
    }
    d
}

/// The same for integer-valued samples of ⌈X⌉: P(⌈X⌉ ≤ k) = F(k) at every integer k.
fn ks_ceil(xs: &[u64], cdf: impl Fn(f64) -> f64) -> f64 {
    let n = xs.len() as f64;
    let max = *xs.iter().max().unwrap();
    (1..=max.min(10_000))
        .map(|k| {
            let emp = xs.iter().filter(|&&x| x <= k).count() as f64 / n;
            (emp - cdf(k as f64)).abs()
        })
        .fold(0.0, f64::max)
}

/// The critical KS distance at the 0.1 % level (asymptotic, 1.95/√n).
fn critical(n: usize) -> f64 {
    1.95 / (n as f64).sqrt()
}

fn cfg() -> WebConfig {
    WebConfig {
        sessions: 300,
        inter_session: Dist::Exponential { mean: 2.0 },
        pages: Dist::Constant { value: 5.0 },
        inter_page: Dist::Exponential { mean: 15.0 },
        objects: Dist::Exponential { mean: 3.0 },
        inter_object: Dist::Exponential { mean: 0.01 },
        object_size: Dist::Pareto2 {
            mean: 12.0,
            shape: 1.2,
        },
        request: 1,
    }
}

/// Runs the model alone: every object is delivered completely `delay` after its request.
fn drive(c: &WebConfig, delay: f64) -> Web {
    let mut w = Web::new(c, 1000, RngStream::from_seed(11));
    let mut pending: Vec<(SimTime, usize)> = Vec::new();
    let mut launch = Vec::new();
    loop {
        let t_app = w.next_timer();
        let t_net = pending.iter().map(|p| p.0).min();
        let now = match (t_app, t_net) {
            (None, None) => break,
            (a, b) => a.into_iter().chain(b).min().unwrap(),
        };
        if t_app == Some(now) {
            w.on_timer(now, &mut launch);
            for o in launch.drain(..) {
                pending.push((now + Dur::from_secs_f64(delay), o));
            }
        } else {
            let i = pending.iter().position(|p| p.0 == now).unwrap();
            let (_, o) = pending.swap_remove(i);
            let b = w.objects[o].bytes;
            w.on_received(now, o, b);
        }
    }
    w
}

#[test]
fn draws_match_their_distributions() {
    let mut rng = RngStream::from_seed(3);
    for d in [
        Dist::Exponential { mean: 0.01 },
        Dist::Exponential { mean: 15.0 },
        Dist::Pareto2 {
            mean: 10.0,
            shape: 1.2,
        },
        Dist::Pareto2 {
            mean: 12.0,
            shape: 1.5,
        },
        Dist::Uniform { min: 2.0, max: 7.0 },
    ] {
        let mut xs: Vec<f64> = (0..4000).map(|_| d.sample(&mut rng)).collect();
        let n = xs.len();
        let dn = ks(&mut xs, |x| d.cdf(x));
        assert!(dn < critical(n), "{d:?}: D = {dn}");
        // …and the test has power: the same sample against a 20 % larger mean fails.
        let wrong = match d {
            Dist::Exponential { mean } => Dist::Exponential { mean: mean * 1.2 },
            Dist::Pareto2 { mean, shape } => Dist::Pareto2 {
                mean: mean * 1.2,
                shape,
            },
            Dist::Uniform { min, max } => Dist::Uniform {
                min,
                max: max * 1.2,
            },
            Dist::Constant { .. } => unreachable!(),
        };
        assert!(ks(&mut xs, |x| wrong.cdf(x)) > critical(n), "{d:?}");
    }
}

#[test]
fn the_model_generates_its_parameters() {
    let c = cfg();
    let w = drive(&c, 0.5);
    // Sessions: all of them, each with exactly 5 pages.
    let mut per = vec![0u32; c.sessions as usize];
    for p in &w.pages {
        per[p.session as usize] += 1;
        assert!(p.done.is_some());
    }
    assert!(per.iter().all(|&n| n == 5), "{per:?}");
    // Inter-session times: between the starts of the sessions' first pages.
    let mut firsts: Vec<f64> = vec![f64::INFINITY; c.sessions as usize];
    for p in &w.pages {
        let f = &mut firsts[p.session as usize];
        *f = f.min(p.started.as_secs_f64());
    }
    firsts.sort_by(f64::total_cmp);
    let mut gaps: Vec<f64> = firsts.windows(2).map(|x| x[1] - x[0]).collect();
    let n = gaps.len();
    assert!(ks(&mut gaps, |x| c.inter_session.cdf(x)) < critical(n));
    // Inter-page times: from a page's end to the start of the session's next page.
    let mut gaps = Vec::new();
    for s in 0..c.sessions {
        let ps: Vec<&WebPage> = w.pages.iter().filter(|p| p.session == s).collect();
        for x in ps.windows(2) {
            gaps.push((x[1].started - x[0].done.unwrap()).as_secs_f64());
        }
    }
    let n = gaps.len();
    assert_eq!(n, 300 * 4);
    assert!(ks(&mut gaps, |x| c.inter_page.cdf(x)) < critical(n));
    // Objects per page: ⌈Exp(3)⌉.
    let counts: Vec<u64> = w.pages.iter().map(|p| p.objects as u64).collect();
    assert!(ks_ceil(&counts, |x| c.objects.cdf(x)) < critical(counts.len()));
    let launched: usize = w.pages.iter().map(|p| p.objects as usize).sum();
    assert_eq!(launched, w.objects.len());
    // Inter-object times: between the requests of a page's objects.
    let mut gaps = Vec::new();
    for (i, _) in w.pages.iter().enumerate() {
        let ts: Vec<f64> = w
            .objects
            .iter()
            .filter(|o| o.page as usize == i)
            .map(|o| o.requested.as_secs_f64())
            .collect();
        gaps.extend(ts.windows(2).map(|x| x[1] - x[0]));
    }
    let n = gaps.len();
    assert!(n > 1000, "{n}");
    assert!(ks(&mut gaps, |x| c.inter_object.cdf(x)) < critical(n));
    // Object sizes: ⌈Pareto II⌉ packets of 1000 bytes.
    let sizes: Vec<u64> = w.objects.iter().map(|o| o.bytes / 1000).collect();
    assert!(w
        .objects
        .iter()
        .all(|o| o.bytes % 1000 == 0 && o.bytes >= 1000));
    assert!(ks_ceil(&sizes, |x| c.object_size.cdf(x)) < critical(sizes.len()));
    // …and against a wrong shape it fails (the test can fail).
    let wrong = Dist::Pareto2 {
        mean: 12.0,
        shape: 2.0,
    };
    assert!(ks_ceil(&sizes, |x| wrong.cdf(x)) > critical(sizes.len()));
}

#[test]
fn the_next_page_waits_for_the_last_object_of_the_page() {
    let c = WebConfig {
        sessions: 1,
        pages: Dist::Constant { value: 3.0 },
        objects: Dist::Constant { value: 2.0 },
        ..WebConfig::default()
    };
    let w = drive(&c, 4.0);
    assert_eq!(w.pages.len(), 3);
    for x in w.pages.windows(2) {
        // each page's objects take 4 s: the next page cannot start earlier
        assert!(x[1].started >= x[0].done.unwrap());
        assert!((x[0].done.unwrap() - x[0].started).as_secs_f64() >= 4.0);
    }
    assert!(w
        .objects
        .iter()
        .all(|o| o.first.is_some() && o.received == o.bytes));
}

#[test]
fn same_seed_same_traffic() {
    let a = drive(&cfg(), 0.3);
    let b = drive(&cfg(), 0.3);
    assert_eq!(a.objects, b.objects);
    assert_eq!(a.pages, b.pages);
}

#[test]
fn bad_values_name_their_key() {
    let key = |c: WebConfig| c.validate().unwrap_err().key;
    let d = WebConfig::default;
    let shape_one = Dist::Pareto2 {
        mean: 10.0,
        shape: 1.0,
    };
    assert_eq!(
        key(WebConfig {
            object_size: shape_one,
            ..d()
        }),
        "object_size"
    );
    let zero_mean = Dist::Exponential { mean: 0.0 };
    assert_eq!(
        key(WebConfig {
            inter_page: zero_mean,
            ..d()
        }),
        "inter_page"
    );
    let zero = Dist::Constant { value: 0.0 };
    assert_eq!(
        key(WebConfig {
            objects: zero,
            ..d()
        }),
        "objects"
    );
    assert_eq!(key(WebConfig { sessions: 0, ..d() }), "sessions");
    assert!(d().validate().is_ok());
}
