// ns-3 peer of qoslab's P0 Fig. 5 scenario (partitioned token buckets, RTT-proportional
// depths, shaping at the server; validation/ns3_p0_f5.py drives both simulators).
//
//   s_i --1 Gb/s, 0 ms-- s --1 Mb/s, 5 ms-- r --link_i, d_i-- c_i
//   (i = 1..4; base RTTs 50, 300, 300, 600 ms)
//
// Four BulkSend TCP NewReno flows s_i -> c_i (no SACK, segment 1000, timestamps off so
// packets are 1040 bytes, an ACK for every segment, initial window 2, window cap 100
// segments through the receive buffer, min RTO 200 ms, clock granularity 10 ms:
// qoslab's P0 TCP) start uniformly in [0, 1) s. Connection i's partition of the
// aggregate's bucket is a TbfQueueDisc, the root disc of s_i's interface: rate --share
// bit/s, depth --depths[i] bytes, 1000 packets (a connection's waiting packets are never
// dropped, as qoslab's shaper holds them). ns-3's TbfQueueDisc only works as a root disc
// (as a child it wakes itself, not its parent), so each connection gets its own sender
// host one 1 Gb/s, zero-delay hop (8 us per packet) before the server s, whose
// interface is the access link's DropTail. Every other interface: a FifoQueueDisc of 49
// packets in front of a 1-packet device queue (50 in all, qoslab's DropTail 50).
//
// Prints per flow "flow <i> rx_bytes <b> drops <d> retransmitted <r> recoveries <f>
// timeouts <o>": payload delivered to c_i by --duration, drops at the router's disc
// towards c_i, segments the sender sent again (below its highest sequence sent), and its
// entries into CA_RECOVERY and CA_LOSS; then "shaper_drops <n>" (all token buckets) and
// "wall_s <t>"; --sack=1 runs SACK (RFC 6675 recovery) instead of plain NewReno;
// --trace=<i> first prints flow i's cwnd, congestion state and RTO at every change.
#include <chrono>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include "peer_tcp.h"

using namespace ns3;

// Per flow: entries into fast recovery and into loss recovery (RTO), and segments sent
// again (a sequence below the highest the socket has sent).
struct Counts {
  uint64_t recoveries = 0, timeouts = 0, retransmitted = 0;
  SequenceNumber32 high{0};
};
static void CountState(Counts* c, TcpSocketState::TcpCongState_t,
                       TcpSocketState::TcpCongState_t s) {
  if (s == TcpSocketState::CA_RECOVERY) ++c->recoveries;
  if (s == TcpSocketState::CA_LOSS) ++c->timeouts;
}
static void CountSegment(Counts* c, Ptr<const Packet> p, const TcpHeader& h,
                         Ptr<const TcpSocketBase>) {
  if (p->GetSize() == 0) return;
  if (h.GetSequenceNumber() < c->high) {
    ++c->retransmitted;
  } else {
    c->high = h.GetSequenceNumber() + p->GetSize();
  }
}
static void TraceCwnd(uint32_t, uint32_t c) {
  std::cout << "trace " << Simulator::Now().GetSeconds() << " cwnd " << c << "\n";
}
static void TraceState(TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t s) {
  std::cout << "trace " << Simulator::Now().GetSeconds() << " state "
            << TcpSocketState::TcpCongStateName[s] << "\n";
}
static void TraceRto(Time, Time rto) {
  std::cout << "trace " << Simulator::Now().GetSeconds() << " rto " << rto.GetSeconds() << "\n";
}
static void HookState(Ptr<BulkSendApplication> app, Counts* c, bool trace) {
  Ptr<TcpSocketBase> s = DynamicCast<TcpSocketBase>(app->GetSocket());
  if (!s) return;
  s->TraceConnectWithoutContext("CongState", MakeBoundCallback(&CountState, c));
  s->TraceConnectWithoutContext("Tx", MakeBoundCallback(&CountSegment, c));
  if (trace) {
    s->TraceConnectWithoutContext("CongestionWindow", MakeCallback(&TraceCwnd));
    s->TraceConnectWithoutContext("CongState", MakeCallback(&TraceState));
    s->TraceConnectWithoutContext("RTO", MakeCallback(&TraceRto));
  }
}

static std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string x;
  while (std::getline(ss, x, ',')) out.push_back(x);
  return out;
}

int main(int argc, char* argv[]) {
  std::string links = "1000000,500000,500000,100000";
  std::string delays = "20,145,145,295";
  std::string depths = "1903,9219,9219,19659";
  double share = 160000.0;
  double duration = 200.0;
  bool sack = false;
  uint32_t run = 1;
  int32_t trace = -1;
  CommandLine cmd;
  cmd.AddValue("trace", "print \"trace <t> cwnd|state|rto <v>\" lines of this flow", trace);
  cmd.AddValue("links", "client link rates [bit/s], comma-separated", links);
  cmd.AddValue("delays", "client link delays [ms], comma-separated", delays);
  cmd.AddValue("depths", "each flow's bucket depth [bytes], comma-separated", depths);
  cmd.AddValue("share", "each flow's token rate [bit/s]", share);
  cmd.AddValue("duration", "simulated seconds", duration);
  cmd.AddValue("sack", "SACK on (RFC 6675 recovery) instead of NewReno", sack);
  cmd.AddValue("run", "RngRun", run);
  cmd.Parse(argc, argv);
  RngSeedManager::SetRun(run);
  const std::vector<std::string> rate = Split(links), delay = Split(delays), depth = Split(depths);
  const size_t n = rate.size();

  const uint32_t mss = 1000;
  SetPeerTcpDefaults(mss, sack, 1 << 20, 100 * mss);

  NodeContainer hosts;
  hosts.Create(2 + 2 * n);  // s r c1..cn s1..sn
  Ptr<Node> s = hosts.Get(0), r = hosts.Get(1);
  InternetStackHelper stack;
  stack.InstallAll();
  Ipv4AddressHelper addr;
  addr.SetBase("10.0.0.0", "255.255.255.252");
  TrafficControlHelper fifo;
  fifo.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", StringValue("49p"));

  // Access link: the 50-packet DropTail at the server s.
  PointToPointHelper acc;
  acc.SetDeviceAttribute("DataRate", StringValue("1Mbps"));
  acc.SetChannelAttribute("Delay", StringValue("5ms"));
  acc.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));
  NetDeviceContainer ad = acc.Install(s, r);
  fifo.Install(ad);
  addr.Assign(ad);
  addr.NewNetwork();

  // Connection i's sender s_i: its token bucket is the root disc of its own interface,
  // one 1 Gb/s, zero-delay hop before s.
  std::vector<Ptr<QueueDisc>> shapers;
  for (size_t i = 0; i < n; ++i) {
    PointToPointHelper p;
    p.SetDeviceAttribute("DataRate", StringValue("1Gbps"));
    p.SetChannelAttribute("Delay", StringValue("0ms"));
    p.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));
    NetDeviceContainer d = p.Install(hosts.Get(2 + n + i), s);
    TrafficControlHelper tbf;
    tbf.SetRootQueueDisc("ns3::TbfQueueDisc", "Rate",
                         DataRateValue(DataRate(static_cast<uint64_t>(share))), "Burst",
                         UintegerValue(std::stoul(depth[i])), "Mtu", UintegerValue(1500),
                         "MaxSize", StringValue("1000p"));
    shapers.push_back(tbf.Install(d.Get(0)).Get(0));
    fifo.Install(d.Get(1));
    addr.Assign(d);
    addr.NewNetwork();
  }

  std::vector<Ipv4Address> dst(n);
  QueueDiscContainer clientDiscs;
  for (size_t i = 0; i < n; ++i) {
    PointToPointHelper p;
    p.SetDeviceAttribute("DataRate", StringValue(rate[i] + "bps"));
    p.SetChannelAttribute("Delay", StringValue(delay[i] + "ms"));
    p.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));
    NetDeviceContainer d = p.Install(r, hosts.Get(2 + i));
    clientDiscs.Add(fifo.Install(d.Get(0)));
    fifo.Install(d.Get(1));
    dst[i] = addr.Assign(d).GetAddress(1);
    addr.NewNetwork();
  }
  Ipv4GlobalRoutingHelper::PopulateRoutingTables();

  Ptr<UniformRandomVariable> jitter = CreateObject<UniformRandomVariable>();
  std::vector<Ptr<PacketSink>> sinks;
  std::vector<Counts> counts(n);
  for (size_t i = 0; i < n; ++i) {
    PacketSinkHelper sh("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), 5000));
    sinks.push_back(DynamicCast<PacketSink>(sh.Install(hosts.Get(2 + i)).Get(0)));
    BulkSendHelper src("ns3::TcpSocketFactory", InetSocketAddress(dst[i], 5000));
    src.SetAttribute("MaxBytes", UintegerValue(0));
    src.SetAttribute("SendSize", UintegerValue(mss));
    ApplicationContainer a = src.Install(hosts.Get(2 + n + i));
    Time start = Seconds(jitter->GetValue(0.0, 1.0));
    a.Start(start);
    Simulator::Schedule(start + MicroSeconds(1), &HookState,
                        DynamicCast<BulkSendApplication>(a.Get(0)), &counts[i], trace == static_cast<int32_t>(i));
  }

  Simulator::Stop(Seconds(duration));
  auto t0 = std::chrono::steady_clock::now();
  Simulator::Run();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (size_t i = 0; i < n; ++i) {
    std::cout << "flow " << i << " rx_bytes " << sinks[i]->GetTotalRx() << " drops "
              << clientDiscs.Get(i)->GetStats().nTotalDroppedPackets << " retransmitted "
              << counts[i].retransmitted << " recoveries " << counts[i].recoveries
              << " timeouts " << counts[i].timeouts << "\n";
  }
  uint64_t sd = 0;
  for (const auto& q : shapers) sd += q->GetStats().nTotalDroppedPackets;
  std::cout << "shaper_drops " << sd << "\n";
  std::cout << "wall_s " << wall << "\n";
  Simulator::Destroy();
  return 0;
}
