// ns-3 peer of qoslab's P2 Fig. 1 dumbbell without ERUF (validation/ns3_p2_baseline.py
// drives both simulators).
//
//   h1 --10 Mb/s, 2 ms-- r1 --1.5 Mb/s, 5 ms-- r2 --10 Mb/s, 10 ms-- h3
//   h2 --10 Mb/s, 3 ms--/                        \--128 kb/s, 5 ms-- h4
//
// One TCP flow h1 -> h3 (NewReno with SACK, segment 1460, timestamps off so packets are
// 1500 bytes, an ACK for every segment, initial window 2, window cap 64 segments through
// the socket buffers, min RTO 200 ms, clock granularity 10 ms: qoslab's P2 TCP) and three
// CBR flows h2 -> h4 of 100-byte IP packets (72 bytes of UDP payload), starting at 0, 1
// and 2 ms, at --cbr kb/s in total (counted in 100-byte packets, as qoslab counts them).
// Every interface of every node has a RED queue disc of --limit packets (thresholds 5
// and 15, max_p 0.1, w_q 0.002, mean packet size 1000: qoslab's RED); --wait and
// --gentle switch on ns-3's defaults (ns-2's wait_ and gentle_). The device queue
// behind each disc is cut to 1 packet, so the disc gets limit - 1.
//
// Prints "tcp_goodput_bps <g>" and "cbr_goodput_bps <g>" over [warmup, duration],
// "r1_r2_drops <d>" (queue-disc drops at r1 towards r2 after the warm-up), "timeouts <n>"
// and "fast_recoveries <n>" (TCP sender entries into CA_LOSS / CA_RECOVERY after the
// warm-up) and "wall_s <t>".
#include <chrono>
#include <iostream>
#include <string>

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

using namespace ns3;

static uint64_t g_recoveries = 0;
static uint64_t g_losses = 0;
static void CountState(TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t s) {
  if (s == TcpSocketState::CA_RECOVERY) ++g_recoveries;
  if (s == TcpSocketState::CA_LOSS) ++g_losses;
}
static void HookState(Ptr<BulkSendApplication> app) {
  Ptr<TcpSocketBase> s = DynamicCast<TcpSocketBase>(app->GetSocket());
  if (s) s->TraceConnectWithoutContext("CongState", MakeCallback(&CountState));
}

int main(int argc, char* argv[]) {
  double cbrKbps = 2000.0;
  double duration = 500.0;
  double warmup = 20.0;
  uint32_t limit = 50;
  uint32_t run = 1;
  bool wait = false;
  bool gentle = false;
  CommandLine cmd;
  cmd.AddValue("cbr", "total CBR rate [kb/s] in 100-byte IP packets", cbrKbps);
  cmd.AddValue("duration", "simulated seconds", duration);
  cmd.AddValue("warmup", "seconds excluded from goodput", warmup);
  cmd.AddValue("limit", "RED queue limit [packets], disc plus device", limit);
  cmd.AddValue("run", "RngRun", run);
  cmd.AddValue("wait", "RED Wait (ns-2 wait_)", wait);
  cmd.AddValue("gentle", "RED Gentle", gentle);
  cmd.Parse(argc, argv);
  RngSeedManager::SetRun(run);

  const uint32_t mss = 1460;
  Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue("ns3::TcpNewReno"));
  Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
  Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(false));
  Config::SetDefault("ns3::TcpSocketBase::WindowScaling", BooleanValue(true));
  Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(200)));
  Config::SetDefault("ns3::TcpSocketBase::ClockGranularity", TimeValue(MilliSeconds(10)));
  Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(mss));
  Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(2));
  Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(1));
  Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(1 << 20));
  Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(64 * mss));
  Config::SetDefault("ns3::TcpL4Protocol::RecoveryType",
                     TypeIdValue(TypeId::LookupByName("ns3::TcpClassicRecovery")));

  NodeContainer n;
  n.Create(6);  // h1 h2 h3 h4 r1 r2
  Ptr<Node> h1 = n.Get(0), h2 = n.Get(1), h3 = n.Get(2), h4 = n.Get(3), r1 = n.Get(4),
            r2 = n.Get(5);
  InternetStackHelper stack;
  stack.InstallAll();
  Ipv4AddressHelper addr;
  addr.SetBase("10.0.0.0", "255.255.255.252");

  struct Lk {
    Ptr<Node> a, b;
    std::string rate, delay;
  };
  const Lk links[] = {{h1, r1, "10Mbps", "2ms"},   {h2, r1, "10Mbps", "3ms"},
                      {r1, r2, "1.5Mbps", "5ms"},  {r2, h3, "10Mbps", "10ms"},
                      {r2, h4, "128kbps", "5ms"}};
  Ptr<QueueDisc> r1r2;
  Ipv4Address h3Addr, h4Addr;
  for (const Lk& l : links) {
    PointToPointHelper p;
    p.SetDeviceAttribute("DataRate", StringValue(l.rate));
    p.SetChannelAttribute("Delay", StringValue(l.delay));
    p.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));
    NetDeviceContainer d = p.Install(l.a, l.b);
    TrafficControlHelper tch;
    tch.SetRootQueueDisc("ns3::RedQueueDisc", "MaxSize",
                         StringValue(std::to_string(limit - 1) + "p"), "MinTh", DoubleValue(5),
                         "MaxTh", DoubleValue(15), "LInterm", DoubleValue(10), "QW",
                         DoubleValue(0.002), "Gentle", BooleanValue(gentle), "Wait",
                         BooleanValue(wait), "MeanPktSize", UintegerValue(1000),
                         "LinkBandwidth", DataRateValue(DataRate(l.rate)), "LinkDelay",
                         TimeValue(Time(l.delay)));
    QueueDiscContainer qd = tch.Install(d);
    if (l.a == r1 && l.b == r2) r1r2 = qd.Get(0);
    Ipv4InterfaceContainer ifs = addr.Assign(d);
    if (l.b == h3) h3Addr = ifs.GetAddress(1);
    if (l.b == h4) h4Addr = ifs.GetAddress(1);
    addr.NewNetwork();
  }
  Ipv4GlobalRoutingHelper::PopulateRoutingTables();

  PacketSinkHelper tsink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), 5000));
  Ptr<PacketSink> tcpSink = DynamicCast<PacketSink>(tsink.Install(h3).Get(0));
  BulkSendHelper src("ns3::TcpSocketFactory", InetSocketAddress(h3Addr, 5000));
  src.SetAttribute("MaxBytes", UintegerValue(0));
  src.SetAttribute("SendSize", UintegerValue(mss));
  ApplicationContainer ta = src.Install(h1);
  ta.Start(Seconds(0));
  Simulator::Schedule(MicroSeconds(1), &HookState, DynamicCast<BulkSendApplication>(ta.Get(0)));

  PacketSinkHelper usink("ns3::UdpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), 6000));
  Ptr<PacketSink> cbrSink = DynamicCast<PacketSink>(usink.Install(h4).Get(0));
  const uint32_t payload = 100 - 28;
  // qoslab counts a CBR rate in 100-byte packets; OnOff counts its payload.
  const double perFlowBps = cbrKbps * 1000.0 / 3.0 * payload / 100.0;
  for (int i = 0; i < 3; ++i) {
    OnOffHelper cbr("ns3::UdpSocketFactory", InetSocketAddress(h4Addr, 6000));
    cbr.SetConstantRate(DataRate(static_cast<uint64_t>(perFlowBps)), payload);
    ApplicationContainer ca = cbr.Install(h2);
    ca.Start(MilliSeconds(i));
  }

  uint64_t tcpAt = 0, cbrAt = 0, dropsAt = 0, recAt = 0, lossAt = 0;
  Simulator::Schedule(Seconds(warmup), [&]() {
    tcpAt = tcpSink->GetTotalRx();
    cbrAt = cbrSink->GetTotalRx();
    dropsAt = r1r2->GetStats().nTotalDroppedPackets;
    recAt = g_recoveries;
    lossAt = g_losses;
  });
  Simulator::Stop(Seconds(duration));
  auto t0 = std::chrono::steady_clock::now();
  Simulator::Run();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double secs = duration - warmup;
  std::cout << "tcp_goodput_bps " << (tcpSink->GetTotalRx() - tcpAt) * 8.0 / secs << "\n";
  std::cout << "cbr_goodput_bps " << (cbrSink->GetTotalRx() - cbrAt) * 8.0 / secs << "\n";
  std::cout << "r1_r2_drops " << r1r2->GetStats().nTotalDroppedPackets - dropsAt << "\n";
  std::cout << "timeouts " << g_losses - lossAt << "\n";
  std::cout << "fast_recoveries " << g_recoveries - recAt << "\n";
  std::cout << "wall_s " << wall << "\n";
  Simulator::Destroy();
  return 0;
}
