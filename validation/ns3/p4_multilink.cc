// ns-3 peer of qoslab's P4 Fig. 6(a) multiple-link scenario with WAIMD (MulTCP) on f0
// (validation/ns3_p4_waimd.py --figure 6a drives both simulators).
//
//   r0 --15 ms, 20 Mb/s-- r1 --43 ms, 10 Mb/s-- r2 --17 ms, 20 Mb/s-- r3 --43 ms, 20 Mb/s-- r4
//
// Backbone links: RED in byte mode in both directions, buffer rate x 256 ms (320 000
// bytes at 10 Mb/s; the disc gets the buffer - 1040 for the 1-packet device queue),
// thresholds 1/4 and 3/4 of it, max_p 0.1, w_q 0.002, gentle, no wait, mean packet size
// 1000. Access links: 100 Mb/s, 1 ms, DropTail 1000 packets (999 in the disc, 1 in the
// device). Long TCP flows f0..f9 run s_i@r0 -> d_i@r4, short ones f10, f11 r1 -> r2 and
// f12, f13 r3 -> r4, all starting uniformly in [0, 5) s, with the TCP of p4_waimd.cc
// (SACK, segment 1000, ACK per segment, IW 2, 2000-segment window, min RTO 200 ms,
// classic recovery); f0 runs TcpMulTcp (multcp.h) of weight --w, the others TcpNewReno.
// One host u_k per router carries 60 Pareto on/off UDP sources, 15 per backbone link
// (7 or 8 each way, as qoslab assigns them), 200 kb/s while on, mean on 1 s, mean off
// 2 s, shape 1.5, 1000-byte IP packets, starting uniformly in [0, 3) s; and a CBR
// u1 -> u2 of 1000-byte packets at 2 Mb/s for the first second, then a rate uniform in
// 0.5-3.5 Mb/s drawn every second.
//
// Prints "flow <i> goodput_bps <g> timeouts <o> recoveries <f>" for f0..f13 over
// [--warmup, --duration], then "wall_s <t>".
#include <chrono>
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

// UDP payload of a 1000-byte IP packet; OnOff counts payload, qoslab the whole packet.
static const uint32_t kPayload = 1000 - 28;
static DataRate Wire(double bps) {
  return DataRate(static_cast<uint64_t>(bps * kPayload / 1000.0));
}
static void Redraw(Ptr<OnOffApplication> cbr, Ptr<UniformRandomVariable> u, double end) {
  cbr->SetAttribute("DataRate", DataRateValue(Wire(u->GetValue(0.5e6, 3.5e6))));
  if (Simulator::Now().GetSeconds() + 1.0 < end) {
    Simulator::Schedule(Seconds(1.0), &Redraw, cbr, u, end);
  }
}

int main(int argc, char* argv[]) {
  double w = 1.0;
  double duration = 600.0;
  double warmup = 20.0;
  uint32_t run = 1;
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

  const uint32_t nLong = 10;
  // (first router, second router) of each TCP flow f0..f13.
  std::vector<std::pair<int, int>> path(nLong, {0, 4});
  path.insert(path.end(), {{1, 2}, {1, 2}, {3, 4}, {3, 4}});
  const uint32_t nTcp = path.size();

  NodeContainer routers, users, src, dst;
  routers.Create(5);
  users.Create(5);
  src.Create(nTcp);
  dst.Create(nTcp);
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
  auto attach = [&](Ptr<Node> host, Ptr<Node> router) {
    NetDeviceContainer d = access.Install(host, router);
    tail.Install(d);
    Ipv4Address a = addr.Assign(d).GetAddress(0);
    addr.NewNetwork();
    return a;
  };
  std::vector<Ipv4Address> uAddr(5), dAddr(nTcp);
  for (uint32_t k = 0; k < 5; ++k) uAddr[k] = attach(users.Get(k), routers.Get(k));
  for (uint32_t i = 0; i < nTcp; ++i) {
    attach(src.Get(i), routers.Get(path[i].first));
    dAddr[i] = attach(dst.Get(i), routers.Get(path[i].second));
  }
  const std::pair<std::string, double> backbone[] = {
      {"15ms", 20e6}, {"43ms", 10e6}, {"17ms", 20e6}, {"43ms", 20e6}};
  for (uint32_t k = 0; k < 4; ++k) {
    const auto& [delay, bps] = backbone[k];
    const uint32_t buffer = static_cast<uint32_t>(320000 * bps / 10e6);
    PointToPointHelper p;
    p.SetDeviceAttribute("DataRate", DataRateValue(DataRate(static_cast<uint64_t>(bps))));
    p.SetChannelAttribute("Delay", StringValue(delay));
    p.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));
    NetDeviceContainer d = p.Install(routers.Get(k), routers.Get(k + 1));
    TrafficControlHelper red;
    red.SetRootQueueDisc(
        "ns3::RedQueueDisc", "MaxSize", StringValue(std::to_string(buffer - 1040) + "B"),
        "MinTh", DoubleValue(buffer / 4), "MaxTh", DoubleValue(3 * buffer / 4), "LInterm",
        DoubleValue(10), "QW", DoubleValue(0.002), "Gentle", BooleanValue(true), "Wait",
        BooleanValue(false), "MeanPktSize", UintegerValue(1000), "LinkBandwidth",
        DataRateValue(DataRate(static_cast<uint64_t>(bps))), "LinkDelay",
        TimeValue(Time(delay)));
    red.Install(d);
    addr.Assign(d);
    addr.NewNetwork();
  }
  Ipv4GlobalRoutingHelper::PopulateRoutingTables();

  Ptr<UniformRandomVariable> jitter = CreateObject<UniformRandomVariable>();
  std::vector<Ptr<PacketSink>> sinks;
  std::vector<Counts> counts(nTcp);
  for (uint32_t i = 0; i < nTcp; ++i) {
    PacketSinkHelper sh("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), 5000));
    sinks.push_back(DynamicCast<PacketSink>(sh.Install(dst.Get(i)).Get(0)));
    BulkSendHelper bs("ns3::TcpSocketFactory", InetSocketAddress(dAddr[i], 5000));
    bs.SetAttribute("MaxBytes", UintegerValue(0));
    bs.SetAttribute("SendSize", UintegerValue(mss));
    ApplicationContainer a = bs.Install(src.Get(i));
    Time start = Seconds(jitter->GetValue(0.0, 5.0));
    a.Start(start);
    Simulator::Schedule(start + MicroSeconds(1), &Hook,
                        DynamicCast<BulkSendApplication>(a.Get(0)), &counts[i]);
  }

  // UDP sinks on every u_k; Pareto sources c0..c59 as qoslab places them.
  for (uint32_t k = 0; k < 5; ++k) {
    PacketSinkHelper us("ns3::UdpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), 6000));
    us.Install(users.Get(k));
  }
  const double shape = 1.5;
  for (uint32_t c = 0; c < 60; ++c) {
    const uint32_t k = c % 4;
    const bool forward = (c / 4 + k) % 2 == 0;
    const uint32_t a = forward ? k : k + 1, b = forward ? k + 1 : k;
    OnOffHelper on("ns3::UdpSocketFactory", InetSocketAddress(uAddr[b], 6000));
    on.SetAttribute("DataRate", DataRateValue(Wire(200e3)));
    on.SetAttribute("PacketSize", UintegerValue(kPayload));
    // Pareto of mean m and shape a has scale m (a - 1) / a.
    on.SetAttribute("OnTime", StringValue("ns3::ParetoRandomVariable[Scale=" +
                                          std::to_string(1.0 * (shape - 1) / shape) +
                                          "|Shape=1.5]"));
    on.SetAttribute("OffTime", StringValue("ns3::ParetoRandomVariable[Scale=" +
                                           std::to_string(2.0 * (shape - 1) / shape) +
                                           "|Shape=1.5]"));
    ApplicationContainer ap = on.Install(users.Get(a));
    ap.Start(Seconds(jitter->GetValue(0.0, 3.0)));
  }
  OnOffHelper cbr("ns3::UdpSocketFactory", InetSocketAddress(uAddr[2], 6000));
  cbr.SetConstantRate(Wire(2e6), kPayload);
  Ptr<OnOffApplication> cbrApp = DynamicCast<OnOffApplication>(cbr.Install(users.Get(1)).Get(0));
  cbrApp->SetStartTime(Seconds(0));
  Ptr<UniformRandomVariable> rates = CreateObject<UniformRandomVariable>();
  Simulator::Schedule(Seconds(1.0), &Redraw, cbrApp, rates, duration);

  std::vector<uint64_t> rxAt(nTcp);
  std::vector<Counts> countsAt(nTcp);
  Simulator::Schedule(Seconds(warmup), [&]() {
    for (uint32_t i = 0; i < nTcp; ++i) {
      rxAt[i] = sinks[i]->GetTotalRx();
      countsAt[i] = counts[i];
    }
  });
  Simulator::Stop(Seconds(duration));
  auto t0 = std::chrono::steady_clock::now();
  Simulator::Run();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double secs = duration - warmup;
  for (uint32_t i = 0; i < nTcp; ++i) {
    std::cout << "flow " << i << " goodput_bps " << (sinks[i]->GetTotalRx() - rxAt[i]) * 8.0 / secs
              << " timeouts " << counts[i].timeouts - countsAt[i].timeouts << " recoveries "
              << counts[i].recoveries - countsAt[i].recoveries << "\n";
  }
  std::cout << "wall_s " << wall << "\n";
  Simulator::Destroy();
  return 0;
}
