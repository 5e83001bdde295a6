// The TCP every ns-3 peer of the paper reproductions runs (p0_f5.cc, p4_waimd.cc,
// p4_multilink.cc): ns-3's NewReno with classic recovery, as qoslab's ns-2-like defaults
// (no timestamps, 200 ms minimum RTO on a 10 ms clock, an initial window of two segments,
// an ACK per segment); SACK, the MSS and the socket buffers as each peer needs.
#pragma once

#include <cstdint>

#include "ns3/core-module.h"
#include "ns3/internet-module.h"

namespace ns3 {

inline void SetPeerTcpDefaults(uint32_t mss, bool sack, uint32_t sndBuf, uint32_t rcvBuf) {
  Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue("ns3::TcpNewReno"));
  Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(sack));
  Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(false));
  Config::SetDefault("ns3::TcpSocketBase::WindowScaling", BooleanValue(true));
  Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(200)));
  Config::SetDefault("ns3::TcpSocketBase::ClockGranularity", TimeValue(MilliSeconds(10)));
  Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(mss));
  Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(2));
  Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(1));
  Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(sndBuf));
  Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(rcvBuf));
  Config::SetDefault("ns3::TcpL4Protocol::RecoveryType",
                     TypeIdValue(TypeId::LookupByName("ns3::TcpClassicRecovery")));
}

}  // namespace ns3
