// ns-3 peer of qoslab's P3 Fig. 6 scenario, the multi-domain topology with cross
// traffic (scenarios/p3/md-*.toml; validation/ns3_p3_f6.py drives both simulators).
//
//   n1, n2, n0 -- R1 --20 ms-- R2 --2 ms-- R3 --20 ms-- R4 -- n7, n8, n6
//                 n3 --/ \-- n9     n5 --/ \-- n4
//
//   F1 = n1 -> n7, F2 = n2 -> n8 (R1 ... R4, RTT 88 ms), F3 = n3 -> n4 (R2 - R3, 8 ms),
//   F4 = n0 -> n9 (R1 - R2, 44 ms), F5 = n5 -> n6 (R3 - R4, 44 ms).
//
// Every link 10 Mb/s (--middle=1: R1-R2 and R3-R4 at 100 Mb/s); every host on its own
// 1 ms access link with a DropTail queue of 1000 packets (999 in a FifoQueueDisc, 1 in
// the device); the three domain links run three-colour RED on both ends (P3RioDisc
// below: coupled RIO, DP0 {40, 55, 0.02}, DP1 {25, 40, 0.05}, DP2 {10, 25, 0.1}
// packets, w_q 0.002, limit 100 = 99 in the disc + 1 in the device).
//
// Each aggregate is --micro BulkSend TCP connections (ns-3's NewReno without SACK,
// 1024-byte segments, no timestamps, window cap 64 segments through the receive buffer,
// an ACK per segment, initial window 2, min RTO 200 ms, clock 10 ms), starting
// uniformly in [0, 5) s. Each aggregate is marked where it enters its first domain
// router (the router's device facing the source host; the colour rides on the packet as
// a tag): CIR 1 Mb/s, rate measured by a TSW estimator (window 1 s, RFC 2859) and
//   --marker=standard  TSW3CM (RFC 2859) with PIR 2 Mb/s;
//   --marker=rtt       basic RTT-aware (Nandy et al.): above the CIR a packet is out of
//                      profile with probability p = (rate - CIR)/rate (P3's text), and
//                      an out-of-profile packet is DP2 with probability
//                      q = (minRTT/RTT)^2, else DP1;
//   --marker=rtt-rto   as rtt with q = (minRTT/RTT)^2 (minRTO/RTO) (P3 Fig. 1), the
//                      aggregate with the minimum RTT marked by its own RTT/RTO (P3 §III).
// RTT is each aggregate's round-trip propagation time (configured); RTO is the mean over
// the aggregate's connections of their latest RTO estimate without backoff (ns-3's
// value as its estimator sets it, read from the sockets' RTO trace source, whose
// doublings at a timeout are left out);
// the minima over the five aggregates are exchanged every second.
//
// Prints per aggregate "agg <name> rx_bytes <b> timeouts <o> dp0 <bytes> dp1 <pkts>
// dp2 <pkts> rto <s>" over [--warmup, --duration] (payload received by the sink; entries
// into CA_LOSS; bytes and packets marked; the RTO it last published), per domain link
// direction "link <a>-<b> drops <d0> <d1> <d2>" (after the warm-up, per colour), then
// "untagged <n>" (data packets that reached a RIO disc without a colour: must be 0) and
// "wall_s <t>".
//
// --telnet=1: P3 Table I's Telnet workload as qoslab reads it
// (python/qoslab/reproduce/p3_telnet.py, scenarios/p3/telnet-*.toml): every link at
// 1 Mb/s, CIR (PIR) 100 (200) kb/s, and each aggregate --sessions Telnet sessions, each
// on its own NewReno connection: 5-35 writes (uniform), the first at the session's start
// (uniform in [0, --window) s), then exponential gaps of mean 100 ms, every write one
// 1024-byte segment; the connection closes after its last write. A session opens its
// connection at its start and writes its first write when the SYN handshake (which
// qoslab's flows do not have) completes, so that the handshake is not in the writes'
// delay (a SYN is retransmitted after 1 s, RFC 6298's initial RTO, not ns-3's 3 s); a
// connection retransmits for ever (ns-3 would abort it after 6 retransmissions of a
// segment). A write's delay runs from the write to the in-order delivery of its last
// byte at the receiver. --marker=rtt-sw is the basic marker with small-window
// protection (P3 §III, Feroz et al.): a packet of a connection whose cwnd (ns-3's, in
// whole segments, from its CongestionWindow trace) is below 3 segments is DP0; a
// protected packet that would have been DP1/DP2 is owed in bytes and later unprotected
// DP0 packets of the aggregate carry the owed colour (DP2 debt first) until it is paid
// (qoslab's protect_bound = "none"). Prints per aggregate
// "tel <name> writes <w> delivered <d> delay_sum <s> completion_sum <s> sessions <n>
// timeouts <o> dp0 <bytes> dp1 <pkts> dp2 <pkts> protected <pkts> rto <s>"
// (delay_sum: the sum of the delivered writes' delays; completion: a session's last
// delivery - its first write), then the link, untagged and wall_s lines.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/ppp-header.h"
#include "ns3/traffic-control-module.h"

#include "peer_tcp.h"

using namespace ns3;

// ---------------------------------------------------------------------------------------
// The colour a marker gives a packet (0 = DP0, 1 = DP1, 2 = DP2).
class ColourTag : public Tag {
 public:
  uint8_t colour = 0;
  static TypeId GetTypeId() {
    static TypeId tid = TypeId("ns3::P3ColourTag").SetParent<Tag>().AddConstructor<ColourTag>();
    return tid;
  }
  TypeId GetInstanceTypeId() const override { return GetTypeId(); }
  uint32_t GetSerializedSize() const override { return 1; }
  void Serialize(TagBuffer i) const override { i.WriteU8(colour); }
  void Deserialize(TagBuffer i) override { colour = i.ReadU8(); }
  void Print(std::ostream& os) const override { os << "dp" << int(colour); }
};

// ---------------------------------------------------------------------------------------
// Three-colour RED, coupled (RIO-C): the drop decision for colour c uses an EWMA of the
// number of queued packets of colour c and every better colour (RIO's "in" average for
// DP0, the total for DP2), each with its own {min_th, max_th, max_p} and its own count
// since the last drop (Floyd & Jacobson's p_a = p_b / (1 - count p_b)); above max_th a
// packet of that colour is dropped; the averages are updated at every arrival and decay
// over an idle period as if packets of the mean size had been sent. Untagged packets
// (ACKs, SYNs from the receivers) are DP0.
struct RedCurve {
  double minTh, maxTh, maxP;
};
class P3RioDisc : public QueueDisc {
 public:
  static TypeId GetTypeId() {
    static TypeId tid = TypeId("ns3::P3RioDisc")
                            .SetParent<QueueDisc>()
                            .AddConstructor<P3RioDisc>();
    return tid;
  }
  P3RioDisc() : QueueDisc(QueueDiscSizePolicy::NO_LIMITS) {}

  uint32_t limit = 99;
  double wq = 0.002;
  std::array<RedCurve, 3> curve{{{40, 55, 0.02}, {25, 40, 0.05}, {10, 25, 0.1}}};
  double ptc = 1064.0 * 8 / 10e6;  // seconds to send a mean-size packet
  std::array<uint64_t, 3> drops{};
  uint64_t untaggedData = 0;
  Ptr<UniformRandomVariable> rng;

 private:
  std::array<uint32_t, 3> qlen{};
  std::array<double, 3> avg{};
  std::array<int64_t, 3> count{{-1, -1, -1}};
  bool idle = true;
  Time idleSince = Seconds(0);

  static uint8_t ColourOf(Ptr<const QueueDiscItem> item, bool* tagged) {
    ColourTag t;
    *tagged = item->GetPacket()->PeekPacketTag(t);
    return *tagged ? t.colour : 0;
  }

  bool DoEnqueue(Ptr<QueueDiscItem> item) override {
    bool tagged = false;
    uint8_t c = ColourOf(item, &tagged);
    if (!tagged && item->GetPacket()->GetSize() > 100) ++untaggedData;
    // Update every colour's coupled average.
    double m = 0;
    if (idle) m = (Simulator::Now() - idleSince).GetSeconds() / ptc;
    uint32_t cum = 0;
    for (int k = 0; k < 3; ++k) {
      cum += qlen[k];
      if (idle) {
        avg[k] *= std::pow(1 - wq, m);
      } else {
        avg[k] = (1 - wq) * avg[k] + wq * cum;
      }
    }
    idle = false;
    bool drop = false;
    if (GetInternalQueue(0)->GetNPackets() >= limit) {
      drop = true;
    } else {
      const RedCurve& r = curve[c];
      double a = avg[c];
      if (a < r.minTh) {
        count[c] = -1;
      } else if (a >= r.maxTh) {
        drop = true;
      } else {
        ++count[c];
        double pb = r.maxP * (a - r.minTh) / (r.maxTh - r.minTh);
        double denom = 1 - count[c] * pb;
        double pa = denom <= 0 ? 1.0 : pb / denom;
        if (rng->GetValue() < pa) drop = true;
      }
    }
    if (drop) {
      count[c] = 0;
      ++drops[c];
      DropBeforeEnqueue(item, "rio");
      if (GetInternalQueue(0)->GetNPackets() == 0) {
        idle = true;
        idleSince = Simulator::Now();
      }
      return false;
    }
    bool ok = GetInternalQueue(0)->Enqueue(item);
    if (ok) ++qlen[c];
    return ok;
  }

  Ptr<QueueDiscItem> DoDequeue() override {
    Ptr<QueueDiscItem> item = GetInternalQueue(0)->Dequeue();
    if (!item) {
      if (!idle) {
        idle = true;
        idleSince = Simulator::Now();
      }
      return nullptr;
    }
    bool tagged = false;
    --qlen[ColourOf(item, &tagged)];
    if (GetInternalQueue(0)->GetNPackets() == 0) {
      idle = true;
      idleSince = Simulator::Now();
    }
    return item;
  }

  bool CheckConfig() override {
    if (GetNInternalQueues() == 0) {
      AddInternalQueue(CreateObjectWithAttributes<DropTailQueue<QueueDiscItem>>(
          "MaxSize", QueueSizeValue(QueueSize("100000p"))));
    }
    return true;
  }
  void InitializeParams() override {}
};
NS_OBJECT_ENSURE_REGISTERED(P3RioDisc);

// ---------------------------------------------------------------------------------------
// An aggregate: its marker's state, its connections' RTOs and its counters.
struct Aggregate {
  std::string name;
  uint32_t src, srcRouter, dst, dstRouter;  // host / router indices
  double rtt;                                // configured RTT [s]
  // TSW rate estimator [bytes/s] (RFC 2859 §3), started at the CIR at its first packet.
  double rate = 0, tFront = -1;
  // RTO per connection: the latest value its estimator set (no backoff), 0 before the
  // first estimate.
  std::vector<double> rto;
  double published = 1.0;  // mean RTO over the connections with a sample [s]
  // Counters over the measured interval.
  uint64_t dp0Bytes = 0, dp1 = 0, dp2 = 0, timeouts = 0, protectedPkts = 0;
  Ptr<PacketSink> sink;
  // Small-window protection: bytes owed as DP1 and as DP2.
  std::array<uint64_t, 2> owed{};
  // --telnet: the aggregate's sessions by their connection's source port.
  std::map<uint16_t, size_t> byPort;
};

// --telnet: one Telnet session on its own connection.
struct Session {
  Aggregate* agg = nullptr;
  uint32_t index = 0;  // within the aggregate
  Ptr<Socket> sock;
  uint32_t n = 0;                  // writes in the session
  std::vector<double> at, delay;   // per write: when written, its delay (-1: not delivered)
  uint64_t delivered = 0;          // bytes delivered in order
  uint32_t cwndSegs = 0;           // the connection's cwnd in whole segments
  double start = 0;
};
static std::vector<Session> g_sess;
static const uint32_t kWrite = 1024;
static Ptr<ExponentialRandomVariable> g_gap;

static std::string g_marker = "rtt";
static bool g_telnet = false;
static const uint32_t kSmallWindow = 3;
static double g_cir = 1e6 / 8, g_pir = 2e6 / 8;  // bytes/s
static const double kWindow = 1.0;                // TSW window [s]
static std::vector<Aggregate> g_agg;
static double g_minRtt = 1, g_minRto = 1;
static bool g_measuring = false;
static Ptr<UniformRandomVariable> g_mrng;

// The exchange among the markers of the group: every aggregate publishes its RTT and its
// mean RTO, every marker reads the minima.
static void Exchange() {
  g_minRtt = 1e9;
  g_minRto = 1e9;
  for (auto& a : g_agg) {
    double s = 0;
    int n = 0;
    for (double r : a.rto) {
      if (r > 0) {
        s += r;
        ++n;
      }
    }
    if (n > 0) a.published = s / n;
    g_minRtt = std::min(g_minRtt, a.rtt);
    g_minRto = std::min(g_minRto, a.published);
  }
  Simulator::Schedule(Seconds(1), &Exchange);
}

static uint8_t BaseColour(Aggregate& a, uint32_t bytes) {
  double now = Simulator::Now().GetSeconds();
  if (a.tFront < 0) {
    a.rate = g_cir;
    a.tFront = now;
  }
  double inWin = a.rate * kWindow + bytes;
  a.rate = inWin / (now - a.tFront + kWindow);
  a.tFront = now;
  double r = a.rate, u = g_mrng->GetValue();
  if (g_marker == "standard") {  // TSW3CM, RFC 2859 §4
    if (r <= g_cir) return 0;
    if (r <= g_pir) return u < (r - g_cir) / r ? 1 : 0;
    double p1 = (r - g_pir) / r, p2 = (g_pir - g_cir) / r;
    return u < p1 ? 2 : (u < p1 + p2 ? 1 : 0);
  }
  if (r <= g_cir) return 0;
  if (u >= (r - g_cir) / r) return 0;  // DP0 with probability 1 - p (P3's text)
  double q;
  if (g_marker == "rtt" || g_marker == "rtt-sw") {
    q = std::pow(g_minRtt / a.rtt, 2);
  } else if (a.rtt <= g_minRtt) {  // rtt-rto: the minimum-RTT aggregate, its own ratio
    q = a.rtt / a.published;
  } else {
    q = std::pow(g_minRtt / a.rtt, 2) * (g_minRto / a.published);
  }
  return g_mrng->GetValue() < std::min(q, 1.0) ? 2 : 1;
}

// The colour with small-window protection (rtt-sw; `small` says whether the packet's
// connection has cwnd below kSmallWindow) and payback of the protected bytes.
static uint8_t Mark(Aggregate& a, uint32_t bytes, bool small) {
  uint8_t base = BaseColour(a, bytes);
  if (g_marker != "rtt-sw") return base;
  if (small) {
    if (base != 0) {
      if (g_measuring) ++a.protectedPkts;
      a.owed[base - 1] += bytes;
    }
    return 0;
  }
  if (base == 0 && (a.owed[0] > 0 || a.owed[1] > 0)) {
    int i = a.owed[1] > 0 ? 1 : 0;  // DP2 debt first
    a.owed[i] = a.owed[i] > bytes ? a.owed[i] - bytes : 0;
    return static_cast<uint8_t>(i + 1);
  }
  return base;
}

// The source port of a TCP packet as the router's device received it (PPP framed), or
// 0 for anything else.
static uint16_t SourcePort(Ptr<const Packet> p) {
  Ptr<Packet> c = p->Copy();
  PppHeader ppp;
  c->RemoveHeader(ppp);
  Ipv4Header ip;
  c->RemoveHeader(ip);
  if (ip.GetProtocol() != 6) return 0;
  TcpHeader th;
  c->PeekHeader(th);
  return th.GetSourcePort();
}

static void OnArrival(Aggregate* a, Ptr<const Packet> p) {
  uint32_t bytes = p->GetSize() - 2;  // the PPP header is not the IP packet's
  bool small = false;
  if (g_marker == "rtt-sw") {
    auto it = a->byPort.find(SourcePort(p));
    NS_ABORT_MSG_UNLESS(g_telnet, "rtt-sw needs --telnet=1");
    NS_ABORT_MSG_UNLESS(it != a->byPort.end(), "packet of an unknown connection");
    small = g_sess[it->second].cwndSegs < kSmallWindow;
  }
  ColourTag t;
  t.colour = Mark(*a, bytes, small);
  p->AddPacketTag(t);
  if (!g_measuring) return;
  if (t.colour == 0) a->dp0Bytes += bytes;
  if (t.colour == 1) ++a->dp1;
  if (t.colour == 2) ++a->dp2;
}

static void OnState(Aggregate* a, TcpSocketState::TcpCongState_t,
                    TcpSocketState::TcpCongState_t s) {
  if (g_measuring && s == TcpSocketState::CA_LOSS) ++a->timeouts;
}
// A connection's RTO as its estimator last set it: every change the RTO trace reports
// except a backoff (ReTxTimeout doubles the value, capped at 60 s).
static void OnRto(Aggregate* a, uint32_t i, Time old, Time rto) {
  if (rto == Min(old * 2, Seconds(60)) && old.IsStrictlyPositive()) return;
  a->rto[i] = rto.GetSeconds();
}

static void Hook(Ptr<BulkSendApplication> app, Aggregate* a, uint32_t i) {
  Ptr<TcpSocketBase> s = DynamicCast<TcpSocketBase>(app->GetSocket());
  NS_ABORT_MSG_UNLESS(s, "no socket");
  s->TraceConnectWithoutContext("CongState", MakeBoundCallback(&OnState, a));
  NS_ABORT_MSG_UNLESS(s->TraceConnectWithoutContext("RTO", MakeBoundCallback(&OnRto, a, i)),
                      "RTO trace");
}

// --telnet: a session's writes, its cwnd and its deliveries.
static void OnCwnd(Session* s, uint32_t, uint32_t cwnd) { s->cwndSegs = cwnd / kWrite; }
static void Write(Session* s) {
  int r = s->sock->Send(Create<Packet>(kWrite));
  NS_ABORT_MSG_UNLESS(r == static_cast<int>(kWrite), "send buffer full");
  s->at.push_back(Simulator::Now().GetSeconds());
  s->delay.push_back(-1);
  if (s->at.size() < s->n) {
    Simulator::Schedule(Seconds(g_gap->GetValue()), &Write, s);
  } else {
    s->sock->Close();
  }
}
static void OnConnected(Session* s, Ptr<Socket>) { Write(s); }
static void OnConnectFail(Session*, Ptr<Socket>) { NS_ABORT_MSG("a connection failed"); }
static void Open(Session* s, Address dst) {
  Aggregate* a = s->agg;
  s->sock->Bind();
  Address local;
  s->sock->GetSockName(local);
  uint16_t port = InetSocketAddress::ConvertFrom(local).GetPort();
  NS_ABORT_MSG_UNLESS(a->byPort.emplace(port, s - g_sess.data()).second, "port reused");
  Ptr<TcpSocketBase> tcp = DynamicCast<TcpSocketBase>(s->sock);
  tcp->SetAttribute("TcpNoDelay", BooleanValue(true));
  tcp->TraceConnectWithoutContext("CongestionWindow", MakeBoundCallback(&OnCwnd, s));
  tcp->TraceConnectWithoutContext("CongState", MakeBoundCallback(&OnState, a));
  NS_ABORT_MSG_UNLESS(
      tcp->TraceConnectWithoutContext("RTO", MakeBoundCallback(&OnRto, a, s->index)),
      "RTO trace");
  s->sock->SetConnectCallback(MakeBoundCallback(&OnConnected, s),
                              MakeBoundCallback(&OnConnectFail, s));
  s->sock->Connect(dst);
}
static void OnSinkRx(Aggregate* a, Ptr<const Packet> p, const Address& from) {
  auto it = a->byPort.find(InetSocketAddress::ConvertFrom(from).GetPort());
  NS_ABORT_MSG_UNLESS(it != a->byPort.end(), "data of an unknown connection");
  Session& s = g_sess[it->second];
  s.delivered += p->GetSize();
  double now = Simulator::Now().GetSeconds();
  for (size_t j = 0; j < s.at.size() && (j + 1) * kWrite <= s.delivered; ++j) {
    if (s.delay[j] < 0) s.delay[j] = now - s.at[j];
  }
}

static std::vector<uint64_t> g_rxWarm;
static void Warm() {
  g_measuring = true;
  for (size_t k = 0; k < g_agg.size(); ++k) g_rxWarm[k] = g_agg[k].sink->GetTotalRx();
}

int main(int argc, char* argv[]) {
  double duration = 150, warmup = 50;
  uint32_t micro = 200, run = 1;
  bool middle = false;
  uint32_t sessions = 100;
  double window = 50;
  CommandLine cmd;
  cmd.AddValue("marker", "standard | rtt | rtt-rto | rtt-sw (--telnet only)", g_marker);
  cmd.AddValue("telnet", "P3 Table I's Telnet workload (1 Mb/s links)", g_telnet);
  cmd.AddValue("sessions", "--telnet: sessions (connections) per aggregate", sessions);
  cmd.AddValue("window", "--telnet: sessions start uniformly in [0, window) s", window);
  cmd.AddValue("duration", "simulated seconds", duration);
  cmd.AddValue("warmup", "seconds discarded at the start", warmup);
  cmd.AddValue("micro", "TCP connections per aggregate", micro);
  cmd.AddValue("middle", "R1-R2 and R3-R4 at 100 Mb/s (only the middle link congested)",
               middle);
  cmd.AddValue("run", "RngRun", run);
  cmd.Parse(argc, argv);
  NS_ABORT_MSG_UNLESS(g_marker == "standard" || g_marker == "rtt" || g_marker == "rtt-rto" ||
                          (g_marker == "rtt-sw" && g_telnet),
                      "unknown marker");
  // --telnet: every link at 1 Mb/s, the profile scaled with it (P3 §V.D as qoslab reads it).
  const double linkBps = g_telnet ? 1e6 : 10e6;
  if (g_telnet) {
    g_cir = 100e3 / 8;
    g_pir = 200e3 / 8;
  }
  RngSeedManager::SetRun(run);
  g_mrng = CreateObject<UniformRandomVariable>();

  const uint32_t mss = 1024;
  SetPeerTcpDefaults(mss, false, 1 << 17, 64 * mss);
  // --telnet: a connection is never given up (ns-3 aborts one after 6 retransmissions of
  // a segment by default; qoslab's TCP retries for ever): a session whose segment is
  // lost 7 times in a row would otherwise never deliver its writes.
  if (g_telnet) {
    Config::SetDefault("ns3::TcpSocket::DataRetries", UintegerValue(1000000));
    Config::SetDefault("ns3::TcpSocket::ConnCount", UintegerValue(1000000));
    Config::SetDefault("ns3::TcpSocket::ConnTimeout", TimeValue(Seconds(1)));
  }

  // Nodes: hosts n0..n9 are 0..9, routers R1..R4 are 10..13.
  NodeContainer nodes;
  nodes.Create(14);
  auto R = [](int i) { return 9 + i; };  // R(1) .. R(4)
  InternetStackHelper stack;
  stack.InstallAll();
  Ipv4AddressHelper addr;
  addr.SetBase("10.0.0.0", "255.255.255.252");

  TrafficControlHelper fifo;
  fifo.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", StringValue("999p"));
  TrafficControlHelper rio;
  rio.SetRootQueueDisc("ns3::P3RioDisc");

  // Domain links.
  struct Dom {
    int a, b;
    double delayMs;
  };
  const std::vector<Dom> doms = {{1, 2, 20}, {2, 3, 2}, {3, 4, 20}};
  std::vector<std::pair<std::string, Ptr<P3RioDisc>>> rios;
  Ptr<UniformRandomVariable> qrng = CreateObject<UniformRandomVariable>();
  for (size_t k = 0; k < doms.size(); ++k) {
    const Dom& d = doms[k];
    double bps = (middle && k != 1) ? 100e6 : linkBps;
    PointToPointHelper p;
    p.SetDeviceAttribute("DataRate", DataRateValue(DataRate(static_cast<uint64_t>(bps))));
    p.SetChannelAttribute("Delay", TimeValue(MilliSeconds(d.delayMs)));
    p.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));
    NetDeviceContainer dev = p.Install(nodes.Get(R(d.a)), nodes.Get(R(d.b)));
    QueueDiscContainer qd = rio.Install(dev);
    for (int e = 0; e < 2; ++e) {
      Ptr<P3RioDisc> q = DynamicCast<P3RioDisc>(qd.Get(e));
      q->ptc = 1064.0 * 8 / bps;
      q->rng = qrng;
      std::string from = "R" + std::to_string(e == 0 ? d.a : d.b);
      std::string to = "R" + std::to_string(e == 0 ? d.b : d.a);
      rios.emplace_back(from + "-" + to, q);
    }
    addr.Assign(dev);
    addr.NewNetwork();
  }

  g_agg = {{"F1", 1, 1, 7, 4, 0.088}, {"F2", 2, 1, 8, 4, 0.088}, {"F3", 3, 2, 4, 3, 0.008},
           {"F4", 0, 1, 9, 2, 0.044}, {"F5", 5, 3, 6, 4, 0.044}};
  PointToPointHelper acc;
  acc.SetDeviceAttribute("DataRate", DataRateValue(DataRate(static_cast<uint64_t>(linkBps))));
  acc.SetChannelAttribute("Delay", StringValue("1ms"));
  acc.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));
  std::vector<Ipv4Address> dstAddr;
  for (auto& a : g_agg) {
    // Source host -> its router; the marker sits where the router receives from it.
    NetDeviceContainer up = acc.Install(nodes.Get(a.src), nodes.Get(R(a.srcRouter)));
    fifo.Install(up);
    addr.Assign(up);
    addr.NewNetwork();
    up.Get(1)->TraceConnectWithoutContext("PhyRxEnd", MakeBoundCallback(&OnArrival, &a));
    NetDeviceContainer down = acc.Install(nodes.Get(R(a.dstRouter)), nodes.Get(a.dst));
    fifo.Install(down);
    dstAddr.push_back(addr.Assign(down).GetAddress(1));
    addr.NewNetwork();
  }
  Ipv4GlobalRoutingHelper::PopulateRoutingTables();

  Ptr<UniformRandomVariable> jitter = CreateObject<UniformRandomVariable>();
  if (g_telnet) {
    g_gap = CreateObject<ExponentialRandomVariable>();
    g_gap->SetAttribute("Mean", DoubleValue(0.1));
    g_gap->SetAttribute("Bound", DoubleValue(0));
    g_sess.resize(g_agg.size() * sessions);  // never resized again: pointers stay valid
    for (size_t k = 0; k < g_agg.size(); ++k) {
      Aggregate& a = g_agg[k];
      a.rto.assign(sessions, 0.0);
      PacketSinkHelper sh("ns3::TcpSocketFactory",
                          InetSocketAddress(Ipv4Address::GetAny(), 5000));
      a.sink = DynamicCast<PacketSink>(sh.Install(nodes.Get(a.dst)).Get(0));
      a.sink->TraceConnectWithoutContext("Rx", MakeBoundCallback(&OnSinkRx, &a));
      for (uint32_t i = 0; i < sessions; ++i) {
        Session& s = g_sess[k * sessions + i];
        s.agg = &a;
        s.index = i;
        s.sock = Socket::CreateSocket(nodes.Get(a.src), TcpSocketFactory::GetTypeId());
        s.start = jitter->GetValue(0.0, window);
        s.n = jitter->GetInteger(5, 35);
        Simulator::Schedule(Seconds(s.start), &Open, &s,
                            Address(InetSocketAddress(dstAddr[k], 5000)));
      }
    }
  }
  for (size_t k = 0; k < g_agg.size() && !g_telnet; ++k) {
    Aggregate& a = g_agg[k];
    a.rto.assign(micro, 0.0);
    PacketSinkHelper sh("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), 5000));
    a.sink = DynamicCast<PacketSink>(sh.Install(nodes.Get(a.dst)).Get(0));
    for (uint32_t i = 0; i < micro; ++i) {
      BulkSendHelper src("ns3::TcpSocketFactory", InetSocketAddress(dstAddr[k], 5000));
      src.SetAttribute("MaxBytes", UintegerValue(0));
      src.SetAttribute("SendSize", UintegerValue(mss));
      ApplicationContainer app = src.Install(nodes.Get(a.src));
      Time start = Seconds(jitter->GetValue(0.0, 5.0));
      app.Start(start);
      Simulator::Schedule(start + MicroSeconds(1), &Hook,
                          DynamicCast<BulkSendApplication>(app.Get(0)), &a, i);
    }
  }
  g_rxWarm.assign(g_agg.size(), 0);
  Simulator::Schedule(Seconds(0), &Exchange);
  Simulator::Schedule(Seconds(warmup), &Warm);
  std::array<std::vector<uint64_t>, 3> dropsWarm;
  Simulator::Schedule(Seconds(warmup), [&]() {
    for (auto& [n, q] : rios)
      for (int c = 0; c < 3; ++c) dropsWarm[c].push_back(q->drops[c]);
  });

  Simulator::Stop(Seconds(duration));
  auto t0 = std::chrono::steady_clock::now();
  Simulator::Run();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (g_telnet) std::cout << std::setprecision(12);  // the delay sums (F6 prints as before)
  uint64_t untagged = 0;
  for (auto& [n, q] : rios) untagged += q->untaggedData;
  for (size_t k = 0; k < g_agg.size() && g_telnet; ++k) {
    const Aggregate& a = g_agg[k];
    uint64_t writes = 0, delivered = 0;
    double delaySum = 0, completionSum = 0;
    for (uint32_t i = 0; i < sessions; ++i) {
      const Session& s = g_sess[k * sessions + i];
      double sum = 0, last = 0;
      for (size_t j = 0; j < s.at.size(); ++j) {
        ++writes;
        if (s.delay[j] < 0) continue;
        ++delivered;
        sum += s.delay[j];
        last = std::max(last, s.at[j] + s.delay[j]);
      }
      delaySum += sum;
      if (!s.at.empty()) completionSum += last - s.at[0];
    }
    std::cout << "tel " << a.name << " writes " << writes << " delivered " << delivered
              << " delay_sum " << delaySum << " completion_sum " << completionSum << " sessions " << sessions
              << " timeouts " << a.timeouts << " dp0 " << a.dp0Bytes << " dp1 " << a.dp1
              << " dp2 " << a.dp2 << " protected " << a.protectedPkts << " rto "
              << a.published << "\n";
  }
  for (size_t k = 0; k < g_agg.size() && !g_telnet; ++k) {
    const Aggregate& a = g_agg[k];
    std::cout << "agg " << a.name << " rx_bytes " << a.sink->GetTotalRx() - g_rxWarm[k]
              << " timeouts " << a.timeouts << " dp0 " << a.dp0Bytes << " dp1 " << a.dp1
              << " dp2 " << a.dp2 << " rto " << a.published << "\n";
  }
  for (size_t j = 0; j < rios.size(); ++j) {
    std::cout << "link " << rios[j].first << " drops";
    for (int c = 0; c < 3; ++c) std::cout << " " << rios[j].second->drops[c] - dropsWarm[c][j];
    std::cout << "\n";
  }
  std::cout << "untagged " << untagged << "\n";
  std::cout << "wall_s " << wall << "\n";
  Simulator::Destroy();
  return 0;
}
