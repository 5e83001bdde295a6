// Weighted AIMD (MulTCP) for the ns-3 peers of P4 (p4_waimd.cc, p4_multilink.cc).
#pragma once

#include <algorithm>
#include <cmath>
#include <string>

#include "ns3/core-module.h"
#include "ns3/internet-module.h"

namespace ns3 {

// Weighted AIMD (MulTCP) as P4 §3.1 defines it: "For a flow with weight w, WAIMD modifies
// the increase (alpha) and decrease (beta) parameters in AIMD to be alpha*w, and beta/w
// respectively". With TCP's alpha = 1 segment per RTT and beta = 1/2: in congestion
// avoidance w segments per RTT (w * SMSS^2 / cwnd per ACK, at most one segment), on a loss
// ssthresh = (1 - 1/(2w)) of the data in flight, in whole segments, at least two. Slow
// start is ns-3's (one segment per ACK).
class TcpMulTcp : public TcpNewReno {
 public:
  static TypeId GetTypeId() {
    static TypeId tid = TypeId("ns3::TcpMulTcp")
                            .SetParent<TcpNewReno>()
                            .SetGroupName("Internet")
                            .AddConstructor<TcpMulTcp>()
                            .AddAttribute("Weight", "the weight w", DoubleValue(1.0),
                                          MakeDoubleAccessor(&TcpMulTcp::m_w),
                                          MakeDoubleChecker<double>(0.5));
    return tid;
  }
  TcpMulTcp() = default;
  TcpMulTcp(const TcpMulTcp& o) : TcpNewReno(o), m_w(o.m_w) {}
  std::string GetName() const override { return "TcpMulTcp"; }
  void IncreaseWindow(Ptr<TcpSocketState> tcb, uint32_t segmentsAcked) override {
    const double mss = tcb->m_segmentSize;
    if (tcb->m_cWnd < tcb->m_ssThresh && segmentsAcked > 0) {
      tcb->m_cWnd += tcb->m_segmentSize;
      --segmentsAcked;
    }
    if (tcb->m_cWnd >= tcb->m_ssThresh && segmentsAcked > 0) {
      double add = m_w * mss * mss / static_cast<double>(tcb->m_cWnd.Get());
      tcb->m_cWnd += static_cast<uint32_t>(std::clamp(add, 1.0, mss));
    }
  }
  uint32_t GetSsThresh(Ptr<const TcpSocketState> tcb, uint32_t bytesInFlight) override {
    const uint32_t segs = static_cast<uint32_t>(
        std::floor(bytesInFlight * (1.0 - 0.5 / m_w) / tcb->m_segmentSize));
    return std::max<uint32_t>(2, segs) * tcb->m_segmentSize;
  }
  Ptr<TcpCongestionOps> Fork() override { return CopyObject<TcpMulTcp>(this); }

 private:
  double m_w = 1.0;
};
NS_OBJECT_ENSURE_REGISTERED(TcpMulTcp);

}  // namespace ns3
