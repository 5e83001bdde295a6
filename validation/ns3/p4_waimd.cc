// ns-3 peer of qoslab's P4 Fig. 2(a) single link with WAIMD (MulTCP) on f0
// (validation/ns3_p4_waimd.py drives both simulators).
//
//   s_i --100 Mb/s, 1 ms-- r1 --10 Mb/s, 118 ms-- r2 --100 Mb/s, 1 ms-- d_i   (i = 0..9)
//
// Ten BulkSend flows s_i -> d_i, TCP with SACK (segment 1000, timestamps off so packets
// are 1040 bytes, an ACK for every segment, initial window 2, window cap 2000 segments
// through the receive buffer, min RTO 200 ms, clock granularity 10 ms, the whole window
// at ssthresh on entering recovery (TcpClassicRecovery, not PRR): qoslab's P4 TCP),
// starting uniformly in [0, 5) s. f1..f9 run ns-3's TcpNewReno; f0 runs TcpMulTcp (multcp.h),
// of weight --w. The bottleneck r1 -> r2 is RED in byte mode: 320 000 bytes (a 1-packet
// device queue behind the disc, which gets 320 000 - 1040), thresholds 80 000 and
// 240 000 bytes, max_p 0.1, w_q 0.002, gentle, no wait, mean packet size 1000; the access
// links are DropTail 1000 packets (999 in the disc, 1 in the device).
//
// Prints "flow <i> goodput_bps <g> timeouts <o> recoveries <f>" over [--warmup,
// --duration] (payload received; entries into CA_LOSS / CA_RECOVERY), then
// "bottleneck_drops <d>" (after the warm-up) and "wall_s <t>".
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include "peer_tcp.h"
#include "multcp.h"

using namespace ns3;


struct Counts {
  uint64_t recoveries = 0, timeouts = 0;
};
static void CountState(Counts* c, TcpSocketState::TcpCongState_t,
                       TcpSocketState::TcpCongState_t s) {
  if (s == TcpSocketState::CA_RECOVERY) ++c->recoveries;
  if (s == TcpSocketState::CA_LOSS) ++c->timeouts;
}
static void Hook(Ptr<BulkSendApplication> app, Counts* c) {
  Ptr<TcpSocketBase> s = DynamicCast<TcpSocketBase>(app->GetSocket());
  if (s) s->TraceConnectWithoutContext("CongState", MakeBoundCallback(&CountState, c));
}

int main(int argc, char* argv[]) {
  double w = 1.0;
  double duration = 300.0;
  double warmup = 20.0;
  uint32_t run = 1;
  const uint32_t n = 10;
  CommandLine cmd;
  cmd.AddValue("w", "f0's weight", w);
  cmd.AddValue("duration", "simulated seconds", duration);
  cmd.AddValue("warmup", "seconds excluded from goodput and counters", warmup);
  cmd.AddValue("run", "RngRun", run);
  cmd.Parse(argc, argv);
  RngSeedManager::SetRun(run);

  const uint32_t mss = 1000;
  SetPeerTcpDefaults(mss, true, 4 * 2000 * mss, 2000 * mss);
  Config::SetDefault("ns3::TcpMulTcp::Weight", DoubleValue(w));

  NodeContainer routers, src, dst;
  routers.Create(2);
  src.Create(n);
  dst.Create(n);
  InternetStackHelper stack;
  stack.InstallAll();
  src.Get(0)->GetObject<TcpL4Protocol>()->SetAttribute("SocketType",
                                                       TypeIdValue(TcpMulTcp::GetTypeId()));
  Ipv4AddressHelper addr;
  addr.SetBase("10.0.0.0", "255.255.255.252");

  TrafficControlHelper tail;
  tail.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", StringValue("999p"));
  PointToPointHelper access;
  access.SetDeviceAttribute("DataRate", StringValue("100Mbps"));
  access.SetChannelAttribute("Delay", StringValue("1ms"));
  access.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));
  std::vector<Ipv4Address> dAddr(n);
  for (uint32_t i = 0; i < n; ++i) {
    NetDeviceContainer a = access.Install(src.Get(i), routers.Get(0));
    tail.Install(a);
    addr.Assign(a);
    addr.NewNetwork();
    NetDeviceContainer b = access.Install(routers.Get(1), dst.Get(i));
    tail.Install(b);
    dAddr[i] = addr.Assign(b).GetAddress(1);
    addr.NewNetwork();
  }
  PointToPointHelper bn;
  bn.SetDeviceAttribute("DataRate", StringValue("10Mbps"));
  bn.SetChannelAttribute("Delay", StringValue("118ms"));
  bn.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));
  NetDeviceContainer bd = bn.Install(routers.Get(0), routers.Get(1));
  TrafficControlHelper red;
  red.SetRootQueueDisc("ns3::RedQueueDisc", "MaxSize", StringValue("318960B"), "MinTh",
                       DoubleValue(80000), "MaxTh", DoubleValue(240000), "LInterm",
                       DoubleValue(10), "QW", DoubleValue(0.002), "Gentle", BooleanValue(true),
                       "Wait", BooleanValue(false), "MeanPktSize", UintegerValue(1000),
                       "LinkBandwidth", DataRateValue(DataRate("10Mbps")), "LinkDelay",
                       TimeValue(MilliSeconds(118)));
  Ptr<QueueDisc> bq = red.Install(bd.Get(0)).Get(0);
  tail.Install(bd.Get(1));
  addr.Assign(bd);
  Ipv4GlobalRoutingHelper::PopulateRoutingTables();

  Ptr<UniformRandomVariable> jitter = CreateObject<UniformRandomVariable>();
  std::vector<Ptr<PacketSink>> sinks;
  std::vector<Counts> counts(n);
  for (uint32_t i = 0; i < n; ++i) {
    PacketSinkHelper sh("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), 5000));
    sinks.push_back(DynamicCast<PacketSink>(sh.Install(dst.Get(i)).Get(0)));
    BulkSendHelper bs("ns3::TcpSocketFactory", InetSocketAddress(dAddr[i], 5000));
    bs.SetAttribute("MaxBytes", UintegerValue(0));
    bs.SetAttribute("SendSize", UintegerValue(mss));
    ApplicationContainer a = bs.Install(src.Get(i));
    Time start = Seconds(jitter->GetValue(0.0, 5.0));
    a.Start(start);
    Simulator::Schedule(start + MicroSeconds(1), &Hook, DynamicCast<BulkSendApplication>(a.Get(0)),
                        &counts[i]);
  }

  std::vector<uint64_t> rxAt(n);
  std::vector<Counts> countsAt(n);
  uint64_t dropsAt = 0;
  Simulator::Schedule(Seconds(warmup), [&]() {
    for (uint32_t i = 0; i < n; ++i) {
      rxAt[i] = sinks[i]->GetTotalRx();
      countsAt[i] = counts[i];
    }
    dropsAt = bq->GetStats().nTotalDroppedPackets;
  });
  Simulator::Stop(Seconds(duration));
  auto t0 = std::chrono::steady_clock::now();
  Simulator::Run();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double secs = duration - warmup;
  for (uint32_t i = 0; i < n; ++i) {
    std::cout << "flow " << i << " goodput_bps " << (sinks[i]->GetTotalRx() - rxAt[i]) * 8.0 / secs
              << " timeouts " << counts[i].timeouts - countsAt[i].timeouts << " recoveries "
              << counts[i].recoveries - countsAt[i].recoveries << "\n";
  }
  std::cout << "bottleneck_drops " << bq->GetStats().nTotalDroppedPackets - dropsAt << "\n";
  std::cout << "wall_s " << wall << "\n";
  Simulator::Destroy();
  return 0;
}
