//! Events by kind: the counts on hand-computed cases.

/// A world from TOML text.
fn world(text: &str) -> qoslab::world::World {
    let sc = qoslab::scenario::parse(text, qoslab::scenario::Format::Toml).unwrap();
    qoslab::scenario::build(&sc).unwrap()
}

/// A 1 Mb/s link a → b carrying `n` CBR sources of 1000-byte packets every 100 ms
/// (8 ms on the wire each), all sending at the same instants, for 995 ms.
fn sources(n: usize) -> String {
    let mut s = String::from(
        "name = \"k\"\nduration = \"995ms\"\n\
         [[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n\
         [[link]]\na = \"a\"\nb = \"b\"\nrate = \"1Mbps\"\ndelay = \"5ms\"\n",
    );
    for f in ["f", "g", "h"][..n].iter() {
        s += &format!(
            "[[flow]]\nname = \"{f}\"\nfrom = \"a\"\nto = \"b\"\n\
             cbr = {{ rate = \"80kbps\", size = 1000 }}\n"
        );
    }
    s
}

#[test]
fn counts_events_by_kind_on_an_idle_link() {
    // One source: every packet finds the link idle, so each costs its source's event
    // and its arrival, and no transmission ends with a packet waiting behind it.
    let mut w = world(&sources(1));
    w.run().unwrap();
    let k = w.events_by_kind();
    assert_eq!(w.hops, 10);
    assert_eq!(k[0], 10, "arrive {k:?}");
    assert_eq!(k[1], 0, "tx_done {k:?}");
    assert_eq!(k[2] + k[3] + k[4], 0, "{k:?}");
    assert_eq!(k.iter().sum::<u64>(), w.events());
}

#[test]
fn counts_a_transmission_end_per_packet_that_waited() {
    // n sources sending at the same instants: one packet of each round goes straight
    // on the wire, the other n − 1 wait and leave at a transmission end each.
    // With transmissions committed ahead (the default, `world::ahead`) the waiting
    // packets go on the wire as they are admitted, and no transmission end is an event.
    for (n, tx_done) in [(2, 10), (3, 20)] {
        for every_hop in [true, false] {
            let mut w = world(&sources(n));
            w.cut_through = !every_hop;
            w.run().unwrap();
            let k = w.events_by_kind();
            let want = if every_hop { tx_done } else { 0 };
            assert_eq!(w.hops, 10 * n as u64);
            assert_eq!((k[0], k[1]), (10 * n as u64, want), "{n} sources: {k:?}");
            assert_eq!(k.iter().sum::<u64>(), w.events());
        }
    }
}
