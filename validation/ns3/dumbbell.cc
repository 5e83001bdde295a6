// ns-3 peer of qoslab's TCP dumbbell (validation/ns3_peer.py drives both).
//
// n senders -- r1 --(bottleneck)-- r2 -- n receivers. Sender i's access delay sets its
// base RTT; every flow is a BulkSend with NewReno + SACK, timestamps off, segment 1460
// (1500-byte IP packets, as qoslab's mss = 1460), socket buffers of --sockbuf bytes
// (ns-3's 128 KiB default would cap the window of a few fast flows), delayed ACKs (2 segments / 200 ms), min RTO 200 ms,
// initial window 10. The bottleneck queue is a FifoQueueDisc (DropTail) or RedQueueDisc
// of `--limit` packets; the device queue behind it is cut to 1 packet. `--queue=codel`,
// `fq_codel` or `pie` runs ns-3's CoDelQueueDisc, FqCoDelQueueDisc or PieQueueDisc with
// the RFC defaults (RFC 8289 / 8290 / 8033: target 5 ms / interval 100 ms, 1024 flows;
// PIE target 15 ms, T_UPDATE 15 ms, alpha 0.125, beta 1.25, 150 ms burst allowance, its
// timestamp delay estimator, not the dequeue-rate one), ECN off, `--limit` packets.
// `--sample-ms=m` (> 0) also prints "qbytes_samples b1,b2,…": the bytes held by the
// bottleneck queue disc plus the device queue behind it, every m ms after the warm-up.
//
// Prints one line per flow: "flow <i> rtt_ms <r> goodput_bps <g>" over [warmup, end],
// then "bottleneck_packets <n>", "bottleneck_drops <d>" (queue-disc drops after the
// warm-up), "measured_packets <m>" (bottleneck transmissions after the warm-up),
// "retransmitted <r>" (segments the senders sent again, i.e. below their highest sequence
// sent, after the warm-up), "fast_recoveries <f>" and "timeouts <o>" (entries into
// CA_RECOVERY and CA_LOSS after the warm-up, all senders) and "wall_s <t>". `--sack=0` runs plain NewReno.
// `--cc=dctcp` runs TcpDctcp (RFC 8257; ECN on, g 1/16, α starting at 1) instead of
// TcpNewReno; `--queue=red_step --red-k=K` is DCTCP's step marking: RedQueueDisc with
// MinTh = MaxTh = K, QW = 1, UseEcn, UseHardDrop false, not gentle (an ECT arrival that
// finds K packets or more in the disc is marked, never dropped before the limit).
// "bottleneck_marks <m>" counts the disc's CE marks after the warm-up.
// `--cc=cubic` runs TcpCubic (RFC 9438: C 0.4, β 0.7, fast convergence, TCP-friendly
// region), HyStart off unless `--hystart=1`. `--min-rto=ms` sets TcpSocketBase::MinRto
// (default 200 ms, as qoslab's side).
#include <chrono>
#include <iostream>
#include <memory>
#include <sstream>
#include <vector>

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

using namespace ns3;

static std::vector<double> ParseList(const std::string& s) {
  std::vector<double> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) v.push_back(std::stod(item));
  }
  return v;
}

static uint64_t g_bottleneckTx = 0;

// --trace=i: one line per change of flow i's sender state, "trace <t> <what> <value>".
static void TraceU32(std::string what, uint32_t, uint32_t v) {
  std::cout << "trace " << Simulator::Now().GetSeconds() << " " << what << " " << v << "\n";
}
static void TraceState(TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t s) {
  std::cout << "trace " << Simulator::Now().GetSeconds() << " state "
            << TcpSocketState::TcpCongStateName[s] << "\n";
}
static void TraceRto(Time, Time v) {
  std::cout << "trace " << Simulator::Now().GetSeconds() << " rto " << v.GetSeconds() << "\n";
}
static void HookTrace(Ptr<BulkSendApplication> app) {
  Ptr<TcpSocketBase> s = DynamicCast<TcpSocketBase>(app->GetSocket());
  if (!s) return;
  s->TraceConnectWithoutContext("CongestionWindow", MakeBoundCallback(&TraceU32, std::string("cwnd")));
  s->TraceConnectWithoutContext("SlowStartThreshold", MakeBoundCallback(&TraceU32, std::string("ssthresh")));
  s->TraceConnectWithoutContext("CongState", MakeCallback(&TraceState));
  s->TraceConnectWithoutContext("RTO", MakeCallback(&TraceRto));
}
static void CountTx(Ptr<const Packet>) { ++g_bottleneckTx; }

// Bytes waiting at the bottleneck (disc + device queue), sampled every `every`.
static std::vector<uint64_t> g_qbytes;
static void SampleQueue(Ptr<QueueDisc> disc, Ptr<Queue<Packet>> dev, Time every) {
  g_qbytes.push_back(disc->GetNBytes() + dev->GetNBytes());
  Simulator::Schedule(every, &SampleQueue, disc, dev, every);
}

// Retransmissions: a segment whose sequence lies below the highest sequence its socket
// has sent (one counter for all senders, one high-water mark per sender).
static uint64_t g_retx = 0;
static void CountSegment(std::shared_ptr<SequenceNumber32> high, Ptr<const Packet> p,
                         const TcpHeader& h, Ptr<const TcpSocketBase>) {
  if (p->GetSize() == 0) return;
  if (h.GetSequenceNumber() < *high) {
    ++g_retx;
  } else {
    *high = h.GetSequenceNumber() + p->GetSize();
  }
}
// Entries into fast recovery and into loss recovery (RTO), all senders together.
static uint64_t g_recoveries = 0;
static uint64_t g_losses = 0;
static void CountState(TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t s) {
  if (s == TcpSocketState::CA_RECOVERY) ++g_recoveries;
  if (s == TcpSocketState::CA_LOSS) ++g_losses;
}
static void HookRetx(Ptr<BulkSendApplication> app) {
  Ptr<TcpSocketBase> s = DynamicCast<TcpSocketBase>(app->GetSocket());
  if (!s) return;
  auto high = std::make_shared<SequenceNumber32>(0);
  s->TraceConnectWithoutContext("Tx", MakeBoundCallback(&CountSegment, high));
  s->TraceConnectWithoutContext("CongState", MakeCallback(&CountState));
}

int main(int argc, char* argv[]) {
  std::string queue = "droptail";
  std::string bottleneck = "10Mbps";
  std::string access = "100Mbps";
  std::string rttsArg = "20,40,80,160";
  std::string startsArg = "";
  uint32_t flows = 8;
  uint32_t limit = 100;
  double duration = 60.0;
  double warmup = 10.0;
  uint32_t run = 1;
  uint32_t sockbuf = 1 << 24;
  uint32_t delack = 2;
  uint32_t delackMs = 200;
  uint32_t minRtoMs = 200;
  bool sack = true;
  int trace = -1;
  double sampleMs = 0.0;
  std::string cc = "newreno";
  double redK = 20.0;
  bool hystart = false;
  CommandLine cmd;
  cmd.AddValue("queue", "droptail, red, codel, fq_codel or pie", queue);
  cmd.AddValue("sample-ms", "bottleneck queue sampling period after the warm-up [ms] (0: off)",
               sampleMs);
  cmd.AddValue("bottleneck", "bottleneck rate", bottleneck);
  cmd.AddValue("access", "access rate", access);
  cmd.AddValue("rtts", "base RTTs in ms, cycled over flows", rttsArg);
  cmd.AddValue("starts", "start times in s, one per flow", startsArg);
  cmd.AddValue("flows", "number of flows", flows);
  cmd.AddValue("limit", "bottleneck queue limit [packets]", limit);
  cmd.AddValue("duration", "simulated seconds", duration);
  cmd.AddValue("warmup", "seconds excluded from goodput", warmup);
  cmd.AddValue("run", "RngRun", run);
  cmd.AddValue("sockbuf", "socket send/receive buffer [bytes]", sockbuf);
  cmd.AddValue("delack", "segments per delayed ACK (1 = ACK every segment)", delack);
  cmd.AddValue("delack-timeout", "delayed-ACK timeout [ms]", delackMs);
  cmd.AddValue("sack", "SACK on (NewReno + SACK) or off (plain NewReno)", sack);
  cmd.AddValue("trace", "flow whose sender state is printed on every change (-1: none)", trace);
  cmd.AddValue("cc", "congestion control: newreno, cubic or dctcp (dctcp turns ECN on)", cc);
  cmd.AddValue("red-k", "marking threshold K of --queue=red_step [packets]", redK);
  cmd.AddValue("hystart", "TcpCubic's HyStart with --cc=cubic (default off)", hystart);
  cmd.AddValue("min-rto", "TcpSocketBase::MinRto [ms]", minRtoMs);
  cmd.Parse(argc, argv);
  RngSeedManager::SetRun(run);

  std::vector<double> rtts = ParseList(rttsArg);
  std::vector<double> starts = ParseList(startsArg);
  starts.resize(flows, 0.0);

  if (cc == "dctcp") {
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue("ns3::TcpDctcp"));
    Config::SetDefault("ns3::TcpSocketBase::UseEcn", StringValue("On"));
  } else if (cc == "newreno") {
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue("ns3::TcpNewReno"));
  } else if (cc == "cubic") {
    // RFC 9438's constants; TcpFriendliness is its Reno-friendly region (§4.3).
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue("ns3::TcpCubic"));
    Config::SetDefault("ns3::TcpCubic::HyStart", BooleanValue(hystart));
    Config::SetDefault("ns3::TcpCubic::C", DoubleValue(0.4));
    Config::SetDefault("ns3::TcpCubic::Beta", DoubleValue(0.7));
    Config::SetDefault("ns3::TcpCubic::FastConvergence", BooleanValue(true));
    Config::SetDefault("ns3::TcpCubic::TcpFriendliness", BooleanValue(true));
  } else {
    std::cerr << "unknown --cc=" << cc << "\n";
    return 2;
  }
  Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(sack));
  Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(false));
  Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(minRtoMs)));
  Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1460));
  Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
  Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(delack));
  Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(MilliSeconds(delackMs)));
  Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(sockbuf));
  Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(sockbuf));
  Config::SetDefault("ns3::TcpSocketBase::WindowScaling", BooleanValue(true));
  Config::SetDefault("ns3::TcpL4Protocol::RecoveryType",
                     TypeIdValue(TypeId::LookupByName("ns3::TcpClassicRecovery")));

  NodeContainer routers;
  routers.Create(2);
  NodeContainer senders, receivers;
  senders.Create(flows);
  receivers.Create(flows);
  InternetStackHelper stack;
  stack.InstallAll();

  PointToPointHelper bn;
  bn.SetDeviceAttribute("DataRate", StringValue(bottleneck));
  bn.SetChannelAttribute("Delay", StringValue("2ms"));
  bn.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));
  NetDeviceContainer bnDev = bn.Install(routers.Get(0), routers.Get(1));

  TrafficControlHelper tch;
  if (queue == "red") {
    tch.SetRootQueueDisc("ns3::RedQueueDisc", "MaxSize", StringValue(std::to_string(limit) + "p"),
                         "MinTh", DoubleValue(5), "MaxTh", DoubleValue(15), "LInterm", DoubleValue(10),
                         "QW", DoubleValue(0.002), "Gentle", BooleanValue(true), "MeanPktSize",
                         UintegerValue(1500), "LinkBandwidth", DataRateValue(DataRate(bottleneck)),
                         "LinkDelay", TimeValue(MilliSeconds(2)));
  } else if (queue == "red_step") {
    tch.SetRootQueueDisc("ns3::RedQueueDisc", "MaxSize", StringValue(std::to_string(limit) + "p"),
                         "MinTh", DoubleValue(redK), "MaxTh", DoubleValue(redK), "QW",
                         DoubleValue(1.0), "Gentle", BooleanValue(false), "UseEcn",
                         BooleanValue(true), "UseHardDrop", BooleanValue(false), "MeanPktSize",
                         UintegerValue(1500), "LinkBandwidth", DataRateValue(DataRate(bottleneck)),
                         "LinkDelay", TimeValue(MilliSeconds(2)));
  } else if (queue == "codel") {
    tch.SetRootQueueDisc("ns3::CoDelQueueDisc", "MaxSize", StringValue(std::to_string(limit) + "p"),
                         "Target", TimeValue(MilliSeconds(5)), "Interval",
                         TimeValue(MilliSeconds(100)), "MinBytes", UintegerValue(1500), "UseEcn",
                         BooleanValue(false));
  } else if (queue == "fq_codel") {
    // FqCoDelQueueDisc takes its target and interval as strings.
    tch.SetRootQueueDisc("ns3::FqCoDelQueueDisc", "MaxSize", StringValue(std::to_string(limit) + "p"),
                         "Target", StringValue("5ms"), "Interval", StringValue("100ms"), "Flows", UintegerValue(1024), "UseEcn",
                         BooleanValue(false), "Perturbation", UintegerValue(run));
  } else if (queue == "pie") {
    tch.SetRootQueueDisc("ns3::PieQueueDisc", "MaxSize", StringValue(std::to_string(limit) + "p"),
                         "QueueDelayReference", TimeValue(MilliSeconds(15)), "Tupdate",
                         TimeValue(MilliSeconds(15)), "A", DoubleValue(0.125), "B",
                         DoubleValue(1.25), "MaxBurstAllowance", TimeValue(MilliSeconds(150)),
                         "UseDequeueRateEstimator", BooleanValue(false), "UseCapDropAdjustment",
                         BooleanValue(true), "UseDerandomization", BooleanValue(false),
                         "MeanPktSize", UintegerValue(1500), "UseEcn", BooleanValue(false));
  } else if (queue == "droptail") {
    tch.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", StringValue(std::to_string(limit) + "p"));
  } else {
    std::cerr << "unknown --queue=" << queue << "\n";
    return 2;
  }
  QueueDiscContainer discs = tch.Install(bnDev.Get(0));
  bnDev.Get(0)->TraceConnectWithoutContext("PhyTxEnd", MakeCallback(&CountTx));

  Ipv4AddressHelper addr;
  addr.SetBase("10.0.0.0", "255.255.255.252");
  addr.Assign(bnDev);
  addr.NewNetwork();

  std::vector<Ipv4Address> rcvAddr(flows);
  for (uint32_t i = 0; i < flows; ++i) {
    double rtt = rtts[i % rtts.size()];
    // RTT = 2 * (sender access + 2 ms bottleneck + 1 ms receiver access).
    double accessDelay = rtt / 2.0 - 3.0;
    PointToPointHelper a;
    a.SetDeviceAttribute("DataRate", StringValue(access));
    a.SetChannelAttribute("Delay", TimeValue(MicroSeconds(static_cast<int64_t>(accessDelay * 1000))));
    a.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1000p"));
    NetDeviceContainer d1 = a.Install(senders.Get(i), routers.Get(0));
    addr.Assign(d1);
    addr.NewNetwork();
    PointToPointHelper b;
    b.SetDeviceAttribute("DataRate", StringValue(access));
    b.SetChannelAttribute("Delay", StringValue("1ms"));
    b.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1000p"));
    NetDeviceContainer d2 = b.Install(routers.Get(1), receivers.Get(i));
    Ipv4InterfaceContainer ifs = addr.Assign(d2);
    rcvAddr[i] = ifs.GetAddress(1);
    addr.NewNetwork();
  }
  Ipv4GlobalRoutingHelper::PopulateRoutingTables();

  std::vector<Ptr<PacketSink>> sinks(flows);
  for (uint32_t i = 0; i < flows; ++i) {
    uint16_t port = 5000 + i;
    PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
    ApplicationContainer sa = sink.Install(receivers.Get(i));
    sa.Start(Seconds(0));
    sinks[i] = DynamicCast<PacketSink>(sa.Get(0));
    BulkSendHelper src("ns3::TcpSocketFactory", InetSocketAddress(rcvAddr[i], port));
    src.SetAttribute("MaxBytes", UintegerValue(0));
    src.SetAttribute("SendSize", UintegerValue(1460));
    ApplicationContainer ca = src.Install(senders.Get(i));
    ca.Start(Seconds(starts[i]));
    Simulator::Schedule(Seconds(starts[i]) + MicroSeconds(1), &HookRetx,
                        DynamicCast<BulkSendApplication>(ca.Get(0)));
    if (static_cast<int>(i) == trace) {
      Ptr<BulkSendApplication> app = DynamicCast<BulkSendApplication>(ca.Get(0));
      Simulator::Schedule(Seconds(starts[i]) + MicroSeconds(1), &HookTrace, app);
    }
  }

  std::vector<uint64_t> atWarmup(flows, 0);
  uint64_t dropsAtWarmup = 0;
  uint64_t marksAtWarmup = 0;
  uint64_t txAtWarmup = 0;
  uint64_t retxAtWarmup = 0;
  uint64_t recoveriesAtWarmup = 0;
  uint64_t lossesAtWarmup = 0;
  Simulator::Schedule(Seconds(warmup), [&]() {
    recoveriesAtWarmup = g_recoveries;
    lossesAtWarmup = g_losses;
    txAtWarmup = g_bottleneckTx;
    retxAtWarmup = g_retx;
    for (uint32_t i = 0; i < flows; ++i) atWarmup[i] = sinks[i]->GetTotalRx();
    dropsAtWarmup = discs.Get(0)->GetStats().nTotalDroppedPackets;
    marksAtWarmup = discs.Get(0)->GetStats().nTotalMarkedPackets;
  });
  if (sampleMs > 0) {
    Ptr<Queue<Packet>> devq = DynamicCast<PointToPointNetDevice>(bnDev.Get(0))->GetQueue();
    Simulator::Schedule(Seconds(warmup), &SampleQueue, discs.Get(0), devq,
                        Seconds(sampleMs / 1000.0));
  }
  Simulator::Stop(Seconds(duration));
  auto t0 = std::chrono::steady_clock::now();
  Simulator::Run();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (uint32_t i = 0; i < flows; ++i) {
    double g = (sinks[i]->GetTotalRx() - atWarmup[i]) * 8.0 / (duration - warmup);
    std::cout << "flow " << i << " rtt_ms " << rtts[i % rtts.size()] << " goodput_bps " << g << "\n";
  }
  std::cout << "bottleneck_packets " << g_bottleneckTx << "\n";
  std::cout << "bottleneck_drops "
            << discs.Get(0)->GetStats().nTotalDroppedPackets - dropsAtWarmup << "\n";
  std::cout << "bottleneck_marks "
            << discs.Get(0)->GetStats().nTotalMarkedPackets - marksAtWarmup << "\n";
  std::cout << "measured_packets " << g_bottleneckTx - txAtWarmup << "\n";
  std::cout << "retransmitted " << g_retx - retxAtWarmup << "\n";
  std::cout << "fast_recoveries " << g_recoveries - recoveriesAtWarmup << "\n";
  std::cout << "timeouts " << g_losses - lossesAtWarmup << "\n";
  if (sampleMs > 0) {
    std::cout << "qbytes_samples ";
    for (size_t k = 0; k < g_qbytes.size(); ++k) std::cout << (k ? "," : "") << g_qbytes[k];
    std::cout << "\n";
  }
  std::cout << "wall_s " << wall << "\n";
  Simulator::Destroy();
  return 0;
}
