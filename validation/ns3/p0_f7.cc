// ns-3 peer of qoslab's P0 Fig. 7 scenarios (one common token bucket shaping the
// aggregate at the server, waiting connections served in sequential, FCFS or LRU order;
// validation/ns3_p0_f7.py drives both simulators).
//
//   s --1 Mb/s, 5 ms-- r --link_i, d_i-- c_i   (i = 1..4; base RTTs 50, 300, 300, 600 ms)
//
// Four BulkSend TCP flows s -> c_i with the TCP of peer_tcp.h (NewReno without SACK, or
// SACK with --sack=1; segment 1000, 1040-byte packets, an ACK per segment, window cap
// --window segments, 100 by default, through the receive buffer) start uniformly in
// [0, 1) s. They leave the one server host s through its access-link interface, whose
// root queue disc is CommonBucketShaper below: the aggregate's shaper of P0 §4.1 and
// §4.2.2, written from the paper's text and docs/papers/p0.md (not from qoslab's code).
//
// The shaper. One token bucket for the aggregate: --rate bit/s, --burst bytes, full at
// the start; a packet needs tokens for its IP size (1040 bytes). Each connection (told
// apart by its destination address) has a FIFO of data segments TCP released but the
// bucket has not covered yet. Packets that are not data segments (the handshake) pass.
//  - send trigger: a data segment of a connection with nothing waiting goes at once if
//    the bucket covers it; otherwise it waits at the tail of its connection's FIFO;
//  - ACK trigger: a segment arriving at the server on connection i (seen by i's socket
//    before TCP processes it) sends i's waiting packets while the bucket covers them;
//  - timer: every --period (at multiples of it), the waiting connections are served in
//    --order, each sending every waiting packet the bucket covers:
//      sequential: list order (50, 300, 300, 600 ms);
//      fcfs_first: by the time the connection first became non-compliant (its FIFO went
//                  from empty to non-empty), kept until its FIFO is empty (P0 §4.2.2);
//      fcfs:       as fcfs_first, but a connection served and still waiting becomes
//                  non-compliant again at that time;
//      lru:        by the time the connection was last given a token (any trigger).
//    Ties go to the lower index. --triggers=none leaves the timer alone.
// Released packets join the access link's DropTail queue: 49 packets in the disc in
// front of a 1-packet device queue (50 in all, qoslab's DropTail 50); a release into a
// full queue is a drop. Every other interface: a FifoQueueDisc of 49 packets in front of
// a 1-packet device queue.
//
// Prints per flow "flow <i> rx_bytes <b> drops <d> retransmitted <r> recoveries <f>
// timeouts <o> held <h> released_send <a> released_ack <b> released_timer <c> mean_wait
// <w>": payload delivered to c_i by --duration, drops at the router's disc towards c_i,
// segments sent again, entries into CA_RECOVERY and CA_LOSS, then the shaper's counters
// (data segments that waited, packets released per trigger, mean wait of those that
// waited [s]); then "access_drops <n>" and "wall_s <t>".
#include <algorithm>
#include <chrono>
#include <deque>
#include <iostream>
#include <limits>
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

enum class Order { Sequential, Fcfs, FcfsFirst, Lru };
enum Why { kSend = 0, kAck = 1, kTimer = 2 };

// The aggregate's common-bucket shaper (see the header comment). Per connection an
// internal queue (the base class counts a packet enqueued when it enters it and dequeued
// when it leaves it for the access queue); internal queue n takes the packets that pass
// the shaper (handshake segments, unknown destinations) on their way to the same access
// queue, a plain deque the base class does not count.
class CommonBucketShaper : public QueueDisc {
 public:
  static TypeId GetTypeId() {
    static TypeId tid = TypeId("CommonBucketShaper")
                            .SetParent<QueueDisc>()
                            .AddConstructor<CommonBucketShaper>();
    return tid;
  }
  CommonBucketShaper() : QueueDisc(QueueDiscSizePolicy::NO_LIMITS) {}

  struct Conn {
    Ipv4Address dst;
    Time since = Time::Max();  // became non-compliant (FCFS); Max: nothing waiting
    Time lastToken = Seconds(0);
    uint64_t held = 0, released[3] = {0, 0, 0};
    double waitSum = 0;
    std::deque<Time> enq;  // when each waiting packet arrived
  };

  void Configure(const std::vector<Ipv4Address>& dsts, double rateBps, double burst,
                 Time period, Order order, bool send, bool ack, uint32_t accessLimit) {
    for (auto d : dsts) {
      Conn c;
      c.dst = d;
      m_conns.push_back(c);
    }
    m_rate = rateBps / 8.0;
    m_burst = burst;
    m_tokens = burst;
    m_period = period;
    m_order = order;
    m_send = send;
    m_ack = ack;
    m_accessLimit = accessLimit;
  }

  // A segment reached the server on connection i (before its TCP processes it).
  void OnAck(size_t i) {
    if (!m_ack || GetInternalQueue(i)->IsEmpty()) return;
    Serve(i, kAck);
    Run();
  }

  const Conn& GetConn(size_t i) const { return m_conns[i]; }
  uint64_t AccessDrops() const { return m_accessDrops; }

 private:
  bool CheckConfig() override {
    for (size_t i = 0; i <= m_conns.size(); ++i) {
      AddInternalQueue(CreateObjectWithAttributes<DropTailQueue<QueueDiscItem>>(
          "MaxSize", QueueSizeValue(QueueSize("100000p"))));
    }
    return !m_conns.empty();
  }
  void InitializeParams() override {
    m_last = Simulator::Now();
    Simulator::Schedule(m_period, &CommonBucketShaper::Tick, this);
  }

  void Refill() {
    Time now = Simulator::Now();
    m_tokens = std::min(m_burst, m_tokens + m_rate * (now - m_last).GetSeconds());
    m_last = now;
  }
  bool Conforms(uint32_t bytes) {
    Refill();
    return m_tokens + 1e-9 >= bytes;
  }

  // Connection index of a data segment, or -1 (not TCP data, or not the aggregate's).
  int DataConn(Ptr<QueueDiscItem> item) const {
    Ptr<Ipv4QueueDiscItem> ip = DynamicCast<Ipv4QueueDiscItem>(item);
    if (!ip || ip->GetHeader().GetProtocol() != 6) return -1;
    TcpHeader th;
    Ptr<Packet> p = item->GetPacket();
    p->PeekHeader(th);
    if (p->GetSize() <= th.GetSerializedSize()) return -1;
    for (size_t i = 0; i < m_conns.size(); ++i) {
      if (m_conns[i].dst == ip->GetHeader().GetDestination()) return static_cast<int>(i);
    }
    return -1;
  }

  // Into the access link's DropTail queue (already dequeued from the shaper's count).
  void ToAccess(Ptr<QueueDiscItem> item) {
    if (m_access.size() >= m_accessLimit) {
      ++m_accessDrops;
      DropAfterDequeue(item, "access queue full");
      return;
    }
    m_access.push_back(item);
  }

  bool DoEnqueue(Ptr<QueueDiscItem> item) override {
    int i = DataConn(item);
    size_t q = i < 0 ? m_conns.size() : static_cast<size_t>(i);
    if (!GetInternalQueue(q)->Enqueue(item)) return false;
    if (i < 0) {
      ToAccess(GetInternalQueue(q)->Dequeue());
      return true;
    }
    Conn& c = m_conns[i];
    Time now = Simulator::Now();
    if (GetInternalQueue(q)->GetNPackets() == 1 && m_send && Conforms(item->GetSize())) {
      m_tokens -= item->GetSize();
      c.lastToken = now;
      ++c.released[kSend];
      ToAccess(GetInternalQueue(q)->Dequeue());
      return true;
    }
    if (GetInternalQueue(q)->GetNPackets() == 1) c.since = now;
    c.enq.push_back(now);
    ++c.held;
    return true;
  }

  Ptr<QueueDiscItem> DoDequeue() override {
    if (m_access.empty()) return nullptr;
    Ptr<QueueDiscItem> item = m_access.front();
    m_access.pop_front();
    return item;
  }

  // Sends connection i's waiting packets while the bucket covers the head.
  void Serve(size_t i, Why why) {
    Conn& c = m_conns[i];
    Ptr<InternalQueue> q = GetInternalQueue(i);
    Time now = Simulator::Now();
    bool sent = false;
    while (!q->IsEmpty()) {
      if (!Conforms(q->Peek()->GetSize())) {
        if (sent && m_order == Order::Fcfs) c.since = now;
        return;
      }
      sent = true;
      m_tokens -= q->Peek()->GetSize();
      c.lastToken = now;
      ++c.released[why];
      c.waitSum += (now - c.enq.front()).GetSeconds();
      c.enq.pop_front();
      ToAccess(q->Dequeue());
    }
    c.since = Time::Max();
  }

  void Tick() {
    std::vector<size_t> order;
    for (size_t i = 0; i < m_conns.size(); ++i) {
      if (!GetInternalQueue(i)->IsEmpty()) order.push_back(i);
    }
    auto key = [this](size_t i) {
      return m_order == Order::Lru ? m_conns[i].lastToken : m_conns[i].since;
    };
    if (m_order != Order::Sequential) {
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t a, size_t b) { return key(a) < key(b); });
    }
    for (size_t i : order) Serve(i, kTimer);
    Run();
    Simulator::Schedule(m_period, &CommonBucketShaper::Tick, this);
  }

  std::vector<Conn> m_conns;
  std::deque<Ptr<QueueDiscItem>> m_access;
  uint32_t m_accessLimit = 49;
  uint64_t m_accessDrops = 0;
  double m_rate = 0, m_burst = 0, m_tokens = 0;
  Time m_last, m_period;
  Order m_order = Order::Fcfs;
  bool m_send = true, m_ack = true;
};
NS_OBJECT_ENSURE_REGISTERED(CommonBucketShaper);

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
static void AckTrigger(Ptr<CommonBucketShaper> q, size_t i, Ptr<const Packet>,
                       const TcpHeader& h, Ptr<const TcpSocketBase>) {
  if (h.GetFlags() & TcpHeader::ACK) q->OnAck(i);
}
static void Hook(Ptr<BulkSendApplication> app, Counts* c, Ptr<CommonBucketShaper> q,
                 size_t i) {
  Ptr<TcpSocketBase> s = DynamicCast<TcpSocketBase>(app->GetSocket());
  if (!s) return;
  s->TraceConnectWithoutContext("CongState", MakeBoundCallback(&CountState, c));
  s->TraceConnectWithoutContext("Tx", MakeBoundCallback(&CountSegment, c));
  s->TraceConnectWithoutContext("Rx", MakeBoundCallback(&AckTrigger, q, i));
}

static std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string x;
  while (std::getline(ss, x, ',')) out.push_back(x);
  return out;
}

int main(int argc, char* argv[]) {
  std::string links = "500000,500000,500000,500000";
  std::string delays = "20,145,145,295";
  std::string order = "lru";
  std::string triggers = "send,ack";
  double rate = 640000.0, burst = 40000.0, period = 0.015;
  double duration = 200.0;
  bool sack = false;
  uint32_t window = 100;
  uint32_t run = 1;
  CommandLine cmd;
  cmd.AddValue("links", "client link rates [bit/s], comma-separated", links);
  cmd.AddValue("delays", "client link delays [ms], comma-separated", delays);
  cmd.AddValue("rate", "the aggregate's token rate [bit/s]", rate);
  cmd.AddValue("burst", "the aggregate's bucket depth [bytes]", burst);
  cmd.AddValue("period", "the shaping timer's period [s]", period);
  cmd.AddValue("order", "sequential, fcfs, fcfs_first or lru", order);
  cmd.AddValue("triggers", "triggers besides the timer: send,ack (none: timer alone)",
               triggers);
  cmd.AddValue("duration", "simulated seconds", duration);
  cmd.AddValue("sack", "SACK on (RFC 6675 recovery) instead of NewReno", sack);
  cmd.AddValue("window", "window cap [segments] (the receive buffer)", window);
  cmd.AddValue("run", "RngRun", run);
  cmd.Parse(argc, argv);
  RngSeedManager::SetRun(run);
  const std::vector<std::string> lrate = Split(links), delay = Split(delays);
  const size_t n = lrate.size();
  Order ord;
  if (order == "sequential") {
    ord = Order::Sequential;
  } else if (order == "fcfs") {
    ord = Order::Fcfs;
  } else if (order == "fcfs_first") {
    ord = Order::FcfsFirst;
  } else if (order == "lru") {
    ord = Order::Lru;
  } else {
    std::cerr << "unknown --order " << order << "\n";
    return 2;
  }
  const bool trigSend = triggers.find("send") != std::string::npos;
  const bool trigAck = triggers.find("ack") != std::string::npos;

  const uint32_t mss = 1000;
  SetPeerTcpDefaults(mss, sack, 1 << 20, window * mss);

  NodeContainer hosts;
  hosts.Create(2 + n);  // s r c1..cn
  Ptr<Node> s = hosts.Get(0), r = hosts.Get(1);
  InternetStackHelper stack;
  stack.InstallAll();
  Ipv4AddressHelper addr;
  addr.SetBase("10.0.0.0", "255.255.255.252");
  TrafficControlHelper fifo;
  fifo.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", StringValue("49p"));

  PointToPointHelper acc;
  acc.SetDeviceAttribute("DataRate", StringValue("1Mbps"));
  acc.SetChannelAttribute("Delay", StringValue("5ms"));
  acc.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));
  NetDeviceContainer ad = acc.Install(s, r);
  TrafficControlHelper shaper;
  shaper.SetRootQueueDisc("CommonBucketShaper");
  Ptr<CommonBucketShaper> q =
      DynamicCast<CommonBucketShaper>(shaper.Install(ad.Get(0)).Get(0));
  fifo.Install(ad.Get(1));
  addr.Assign(ad);
  addr.NewNetwork();

  std::vector<Ipv4Address> dst(n);
  QueueDiscContainer clientDiscs;
  for (size_t i = 0; i < n; ++i) {
    PointToPointHelper p;
    p.SetDeviceAttribute("DataRate", StringValue(lrate[i] + "bps"));
    p.SetChannelAttribute("Delay", StringValue(delay[i] + "ms"));
    p.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));
    NetDeviceContainer d = p.Install(r, hosts.Get(2 + i));
    clientDiscs.Add(fifo.Install(d.Get(0)));
    fifo.Install(d.Get(1));
    dst[i] = addr.Assign(d).GetAddress(1);
    addr.NewNetwork();
  }
  Ipv4GlobalRoutingHelper::PopulateRoutingTables();
  // Configured before the simulation starts: the disc's CheckConfig and
  // InitializeParams run when it is initialised at time 0.
  q->Configure(dst, rate, burst, Seconds(period), ord, trigSend, trigAck, 49);

  Ptr<UniformRandomVariable> jitter = CreateObject<UniformRandomVariable>();
  std::vector<Ptr<PacketSink>> sinks;
  std::vector<Counts> counts(n);
  for (size_t i = 0; i < n; ++i) {
    PacketSinkHelper sh("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), 5000));
    sinks.push_back(DynamicCast<PacketSink>(sh.Install(hosts.Get(2 + i)).Get(0)));
    BulkSendHelper src("ns3::TcpSocketFactory", InetSocketAddress(dst[i], 5000));
    src.SetAttribute("MaxBytes", UintegerValue(0));
    src.SetAttribute("SendSize", UintegerValue(mss));
    ApplicationContainer a = src.Install(s);
    Time start = Seconds(jitter->GetValue(0.0, 1.0));
    a.Start(start);
    Simulator::Schedule(start + MicroSeconds(1), &Hook,
                        DynamicCast<BulkSendApplication>(a.Get(0)), &counts[i], q, i);
  }

  Simulator::Stop(Seconds(duration));
  auto t0 = std::chrono::steady_clock::now();
  Simulator::Run();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (size_t i = 0; i < n; ++i) {
    const auto& c = q->GetConn(i);
    std::cout << "flow " << i << " rx_bytes " << sinks[i]->GetTotalRx() << " drops "
              << clientDiscs.Get(i)->GetStats().nTotalDroppedPackets << " retransmitted "
              << counts[i].retransmitted << " recoveries " << counts[i].recoveries
              << " timeouts " << counts[i].timeouts << " held " << c.held
              << " released_send " << c.released[kSend] << " released_ack "
              << c.released[kAck] << " released_timer " << c.released[kTimer]
              << " mean_wait "
              << (c.held ? c.waitSum / std::max<uint64_t>(1, c.released[kAck] +
                                                                  c.released[kTimer])
                         : 0.0)
              << "\n";
  }
  std::cout << "access_drops " << q->AccessDrops() << "\n";
  std::cout << "wall_s " << wall << "\n";
  Simulator::Destroy();
  return 0;
}
