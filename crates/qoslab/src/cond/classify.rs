//! Multi-field classification (RFC 2475 §2.3.1, "MF classifier"): filters on
//! `<src addr, src port, dst addr, dst port>` as in P0 Table 1, plus protocol and DSCP,
//! each field either a value or ANY.
//!
//! Scenario files name nodes; [`FilterConfig::build`] resolves the names to
//! [`NodeId`]s once, so matching compares integers only.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};

use crate::config::ScenarioError;
use crate::dscp::{check_dscp, DscpSet};
use crate::packet::{FlowId, NodeId, Packet, Proto};

/// A filter as written in a scenario file. Absent fields, `"*"` and `"any"` match
/// anything (P0 Table 1's `*`).
///
/// ```toml
/// filter = { src = "server", src_port = 80, dst = "*", proto = "tcp" }
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilterConfig {
    /// Source node name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src: Option<String>,
    /// Source port.
    #[serde(default, skip_serializing_if = "PortMatch::is_any")]
    pub src_port: PortMatch,
    /// Destination node name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst: Option<String>,
    /// Destination port.
    #[serde(default, skip_serializing_if = "PortMatch::is_any")]
    pub dst_port: PortMatch,
    /// Transport protocol: "tcp", "udp" or "icmp".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proto: Option<ProtoName>,
    /// DSCP: one codepoint or a list (numbers or PHB names); matches any of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dscp: Option<DscpList>,
    /// Flow name: the flow's packets in both directions (data and ACKs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<String>,
    /// The flow `flow` names, bound by the scenario builder
    /// ([`FilterConfig::bind_flow`]) before the filter is built.
    #[serde(skip)]
    pub flow_id: Option<FlowId>,
    /// Source address prefix (`"10.1.0.0/16"`): packets from nodes whose address is in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src_prefix: Option<String>,
    /// Destination address prefix: packets to nodes whose address is in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst_prefix: Option<String>,
    /// The nodes in `src_prefix` and `dst_prefix`, bound by the scenario builder
    /// ([`FilterConfig::bind_addresses`]) before the filter is built.
    #[serde(skip)]
    pub prefix_nodes: [Option<NodeSet>; 2],
}

/// A set of nodes (bit i: `NodeId(i)`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeSet(Vec<u64>);

impl NodeSet {
    /// True if `n` is in the set.
    #[inline]
    pub fn contains(&self, n: NodeId) -> bool {
        let i = n.0 as usize;
        self.0
            .get(i / 64)
            .is_some_and(|w| w & (1u64 << (i % 64)) != 0)
    }
}

/// Parses a dotted-quad IPv4 address (`"10.1.2.3"`).
pub fn parse_ipv4(s: &str) -> Option<[u8; 4]> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut out = [0u8; 4];
    for (o, p) in out.iter_mut().zip(&parts) {
        if p.is_empty() || p.len() > 3 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *o = p.parse().ok()?;
    }
    Some(out)
}

/// Parses an IPv4 prefix `"a.b.c.d/len"` into (network, length); host bits must be 0.
pub fn parse_prefix(s: &str) -> Result<(u32, u8), String> {
    let bad = || format!("expected an IPv4 prefix such as \"10.1.0.0/16\", found {s:?}");
    let (a, l) = s.split_once('/').ok_or_else(bad)?;
    let addr = u32::from_be_bytes(parse_ipv4(a).ok_or_else(bad)?);
    if l.is_empty() || !l.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let len: u8 = l.parse().ok().filter(|&n: &u8| n <= 32).ok_or_else(bad)?;
    if addr & !prefix_mask(len) != 0 {
        return Err(format!(
            "expected the host bits of {s:?} to be 0 (the network of a /{len})"
        ));
    }
    Ok((addr, len))
}

fn prefix_mask(len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - len as u32)
    }
}

/// One DSCP or a list of them in a filter, as written (numbers or PHB names).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DscpList(pub Vec<u8>);

impl Serialize for DscpList {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0.as_slice() {
            [one] => s.serialize_u8(*one),
            many => s.collect_seq(many),
        }
    }
}

impl<'de> Deserialize<'de> for DscpList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct One(#[serde(deserialize_with = "crate::dscp::de_dscp")] u8);
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            One(One),
            Many(Vec<One>),
        }
        match Either::deserialize(d).map_err(|_| {
            de::Error::custom(
                "expected a DSCP (0–63 or a PHB name like \"EF\", \"AF11\") or a list of them",
            )
        })? {
            Either::One(One(v)) => Ok(DscpList(vec![v])),
            Either::Many(v) => Ok(DscpList(v.into_iter().map(|o| o.0).collect())),
        }
    }
}

/// A protocol name in a filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProtoName {
    /// TCP.
    Tcp,
    /// UDP.
    Udp,
    /// ICMP.
    Icmp,
}

impl From<ProtoName> for Proto {
    fn from(p: ProtoName) -> Proto {
        match p {
            ProtoName::Tcp => Proto::Tcp,
            ProtoName::Udp => Proto::Udp,
            ProtoName::Icmp => Proto::Icmp,
        }
    }
}

/// A port in a filter: a number, or ANY (`"*"`, `"any"`, or absent).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortMatch(pub Option<u16>);

impl PortMatch {
    /// True if it matches every port.
    pub fn is_any(&self) -> bool {
        self.0.is_none()
    }
}

impl Serialize for PortMatch {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Some(p) => s.serialize_u16(p),
            None => s.serialize_str("*"),
        }
    }
}

struct PortVisitor;

impl<'de> Visitor<'de> for PortVisitor {
    type Value = PortMatch;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a port number 0–65535 or \"*\"")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<PortMatch, E> {
        if is_wildcard(v) {
            Ok(PortMatch(None))
        } else {
            Err(E::invalid_value(de::Unexpected::Str(v), &self))
        }
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<PortMatch, E> {
        u16::try_from(v)
            .map(|p| PortMatch(Some(p)))
            .map_err(|_| E::invalid_value(de::Unexpected::Unsigned(v), &self))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<PortMatch, E> {
        u16::try_from(v)
            .map(|p| PortMatch(Some(p)))
            .map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &self))
    }
}

impl<'de> Deserialize<'de> for PortMatch {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(PortVisitor)
    }
}

fn is_wildcard(s: &str) -> bool {
    s == "*" || s.eq_ignore_ascii_case("any")
}

/// A compiled filter: `None` is ANY.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    /// Source node.
    pub src: Option<NodeId>,
    /// Source port.
    pub src_port: Option<u16>,
    /// Destination node.
    pub dst: Option<NodeId>,
    /// Destination port.
    pub dst_port: Option<u16>,
    /// Protocol.
    pub proto: Option<Proto>,
    /// DSCP set.
    pub dscp: Option<DscpSet>,
    /// Flow.
    pub flow: Option<FlowId>,
    /// Source nodes (an address prefix).
    pub src_in: Option<NodeSet>,
    /// Destination nodes (an address prefix).
    pub dst_in: Option<NodeSet>,
}

impl Filter {
    /// True if every specified field equals the packet's.
    #[inline]
    pub fn matches(&self, p: &Packet) -> bool {
        !matches!(self.src, Some(v) if v != p.src)
            && !matches!(self.dst, Some(v) if v != p.dst)
            && !matches!(self.src_port, Some(v) if v != p.src_port)
            && !matches!(self.dst_port, Some(v) if v != p.dst_port)
            && !matches!(self.proto, Some(v) if v != p.proto())
            && !matches!(self.dscp, Some(v) if !v.contains(p.dscp))
            && !matches!(self.flow, Some(v) if v != p.flow)
            && !matches!(&self.src_in, Some(s) if !s.contains(p.src))
            && !matches!(&self.dst_in, Some(s) if !s.contains(p.dst))
    }
}

impl FilterConfig {
    /// Checks field ranges; `key` is the path of this filter (e.g. `rules[0].filter`).
    pub fn validate(&self, key: &str) -> Result<(), ScenarioError> {
        if let Some(l) = &self.dscp {
            for &d in &l.0 {
                check_dscp(&format!("{key}.dscp"), d)?;
            }
            if l.0.is_empty() {
                return Err(ScenarioError::new(
                    format!("{key}.dscp"),
                    "expected at least one DSCP (leave the key out to match any)",
                ));
            }
        }
        for (k, p) in [
            ("src_prefix", &self.src_prefix),
            ("dst_prefix", &self.dst_prefix),
        ] {
            if let Some(p) = p {
                parse_prefix(p).map_err(|m| ScenarioError::new(format!("{key}.{k}"), m))?;
            }
        }
        Ok(())
    }

    /// Binds `src_prefix` / `dst_prefix` to the nodes whose address (`addrs`, indexed
    /// by node) is in them; a malformed prefix is an error at `key.src_prefix`.
    pub fn bind_addresses(&mut self, key: &str, addrs: &[[u8; 4]]) -> Result<(), ScenarioError> {
        for (i, (k, p)) in [
            ("src_prefix", &self.src_prefix),
            ("dst_prefix", &self.dst_prefix),
        ]
        .into_iter()
        .enumerate()
        {
            let Some(p) = p else { continue };
            let (net, len) =
                parse_prefix(p).map_err(|m| ScenarioError::new(format!("{key}.{k}"), m))?;
            let mut set = vec![0u64; addrs.len().div_ceil(64)];
            for (n, a) in addrs.iter().enumerate() {
                if u32::from_be_bytes(*a) & prefix_mask(len) == net {
                    set[n / 64] |= 1u64 << (n % 64);
                }
            }
            self.prefix_nodes[i] = Some(NodeSet(set));
        }
        Ok(())
    }

    /// Binds `flow` to its id through `lookup` (flow names → ids); an unknown name is an
    /// error at `key.flow`.
    pub fn bind_flow(
        &mut self,
        key: &str,
        lookup: &dyn Fn(&str) -> Option<FlowId>,
    ) -> Result<(), ScenarioError> {
        if let Some(name) = &self.flow {
            self.flow_id = Some(lookup(name).ok_or_else(|| {
                ScenarioError::new(format!("{key}.flow"), format!("no flow named {name:?}"))
            })?);
        }
        Ok(())
    }

    fn bound_prefix(
        &self,
        key: &str,
        i: usize,
        prefix: &Option<String>,
    ) -> Result<Option<NodeSet>, ScenarioError> {
        match (prefix, &self.prefix_nodes[i]) {
            (None, _) => Ok(None),
            (Some(_), Some(s)) => Ok(Some(s.clone())),
            (Some(p), None) => Err(ScenarioError::new(
                format!("{key}.{}", ["src_prefix", "dst_prefix"][i]),
                format!("address prefix {p:?} cannot be used here (prefix filters need a scenario's node addresses)"),
            )),
        }
    }

    /// Resolves node names; an unknown name is an error at `key.src` / `key.dst`.
    pub fn build(
        &self,
        key: &str,
        resolve: &dyn Fn(&str) -> Option<NodeId>,
    ) -> Result<Filter, ScenarioError> {
        self.validate(key)?;
        let node = |field: &str, name: &Option<String>| -> Result<Option<NodeId>, ScenarioError> {
            match name.as_deref() {
                None => Ok(None),
                Some(n) if is_wildcard(n) => Ok(None),
                Some(n) => resolve(n).map(Some).ok_or_else(|| {
                    ScenarioError::new(
                        format!("{key}.{field}"),
                        format!("no node named {n:?} (expected a node name or \"*\")"),
                    )
                }),
            }
        };
        Ok(Filter {
            src: node("src", &self.src)?,
            src_port: self.src_port.0,
            dst: node("dst", &self.dst)?,
            dst_port: self.dst_port.0,
            proto: self.proto.map(Proto::from),
            dscp: self
                .dscp
                .as_ref()
                .map(|l| DscpSet(l.0.iter().fold(0u64, |m, &d| m | 1u64 << d))),
            src_in: self.bound_prefix(key, 0, &self.src_prefix)?,
            dst_in: self.bound_prefix(key, 1, &self.dst_prefix)?,
            flow: match (&self.flow, self.flow_id) {
                (None, _) => None,
                (Some(_), Some(id)) => Some(id),
                (Some(name), None) => {
                    return Err(ScenarioError::new(
                        format!("{key}.flow"),
                        format!("no flow named {name:?} (flow filters need a scenario)"),
                    ))
                }
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Header, TcpHeader, UdpHeader};

    pub(crate) fn resolver(name: &str) -> Option<NodeId> {
        match name {
            "server" => Some(NodeId(0)),
            "c1" => Some(NodeId(1)),
            "c2" => Some(NodeId(2)),
            _ => None,
        }
    }

    fn pkt(src: u32, sp: u16, dst: u32, dp: u16) -> Packet {
        Packet {
            src: NodeId(src),
            src_port: sp,
            dst: NodeId(dst),
            dst_port: dp,
            ..Default::default()
        }
    }

    fn filter(toml_text: &str) -> Filter {
        #[derive(Deserialize)]
        struct T {
            filter: FilterConfig,
        }
        let t: T = toml::from_str(toml_text).unwrap();
        t.filter.build("filter", &resolver).unwrap()
    }

    #[test]
    fn wildcards_match_anything_values_match_exactly() {
        // P0 Table 1 row 2: <server, 80, *, *>.
        let f =
            filter("filter = { src = \"server\", src_port = 80, dst = \"*\", dst_port = \"any\" }");
        assert!(f.matches(&pkt(0, 80, 1, 5000)));
        assert!(f.matches(&pkt(0, 80, 2, 1)));
        assert!(!f.matches(&pkt(0, 81, 1, 5000)));
        assert!(!f.matches(&pkt(1, 80, 0, 5000)));
        // P0 Table 1 row 3: <server, *, c2, *>.
        let f = filter("filter = { src = \"server\", dst = \"c2\" }");
        assert!(f.matches(&pkt(0, 1, 2, 9)));
        assert!(!f.matches(&pkt(0, 1, 1, 9)));
        // Empty filter: ANY everywhere.
        let f = filter("filter = {}");
        assert!(f.matches(&pkt(7, 7, 7, 7)));
        // Protocol and DSCP.
        let f = filter("filter = { proto = \"udp\", dscp = 10 }");
        let mut p = pkt(0, 0, 0, 0);
        p.hdr = Header::Tcp(TcpHeader::default());
        assert!(!f.matches(&p));
        p.dscp = 10;
        assert!(!f.matches(&p), "a TCP segment is not UDP");
        p.hdr = Header::Udp(UdpHeader::default());
        assert!(f.matches(&p));
        // A set of codepoints, by name or number.
        let f = filter("filter = { dscp = [\"EF\", \"AF11\", 40] }");
        for (d, m) in [(46, true), (10, true), (40, true), (12, false), (0, false)] {
            p.dscp = d;
            assert_eq!(f.matches(&p), m, "dscp {d}");
        }
        let f = filter("filter = { dscp = \"AF12\" }");
        p.dscp = 12;
        assert!(f.matches(&p));
    }

    #[test]
    fn flow_names_bind_to_flows() {
        #[derive(Deserialize)]
        struct T {
            filter: FilterConfig,
        }
        let mut t: T = toml::from_str("filter = { flow = \"voice\" }").unwrap();
        // Unbound (no scenario to name flows): an error naming the key.
        assert_eq!(t.filter.build("f", &resolver).unwrap_err().key, "f.flow");
        let lookup = |n: &str| (n == "voice").then_some(FlowId(3));
        t.filter.bind_flow("f", &lookup).unwrap();
        let f = t.filter.build("f", &resolver).unwrap();
        let mut p = pkt(0, 0, 0, 0);
        assert!(!f.matches(&p));
        p.flow = FlowId(3);
        assert!(f.matches(&p));
        let mut t: T = toml::from_str("filter = { flow = \"video\" }").unwrap();
        let e = t.filter.bind_flow("rules[2].filter", &lookup).unwrap_err();
        assert_eq!(e.key, "rules[2].filter.flow");
    }

    #[test]
    fn bad_filters_are_errors_naming_the_key() {
        let fc = FilterConfig {
            dst: Some("nowhere".into()),
            ..Default::default()
        };
        let e = fc.build("rules[1].filter", &resolver).unwrap_err();
        assert_eq!(e.key, "rules[1].filter.dst");
        assert!(e.message.contains("nowhere"));
        #[derive(Deserialize, Debug)]
        #[allow(dead_code)]
        struct T {
            filter: FilterConfig,
        }
        assert!(toml::from_str::<T>("filter = { src_port = 70000 }").is_err());
        assert!(toml::from_str::<T>("filter = { src_port = \"http\" }").is_err());
        assert!(toml::from_str::<T>("filter = { sauce = \"x\" }").is_err());
        assert!(toml::from_str::<T>("filter = { dscp = \"AF5\" }").is_err());
        let fc: T = toml::from_str("filter = { dscp = [1, 64] }").unwrap();
        assert_eq!(fc.filter.build("k", &resolver).unwrap_err().key, "k.dscp");
    }
}
