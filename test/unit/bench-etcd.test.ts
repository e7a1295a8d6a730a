import { describe, expect, it } from 'vitest';
import { apiserverSince, etcdCounters } from '../../bench/objects.js';

/** A slice of etcd 3.6's /metrics page, as its client URL serves it. */
const page = (range: number, txn: number, sent: number): string =>
  [
    '# HELP grpc_server_handled_total Total number of RPCs completed on the server.',
    '# TYPE grpc_server_handled_total counter',
    `grpc_server_handled_total{grpc_code="OK",grpc_method="Range",grpc_service="etcdserverpb.KV",grpc_type="unary"} ${range}`,
    'grpc_server_handled_total{grpc_code="NotFound",grpc_method="Range",grpc_service="etcdserverpb.KV",grpc_type="unary"} 2',
    `grpc_server_handled_total{grpc_code="OK",grpc_method="Txn",grpc_service="etcdserverpb.KV",grpc_type="unary"} ${txn}`,
    'grpc_server_handled_total{grpc_code="OK",grpc_method="Watch",grpc_service="etcdserverpb.Watch",grpc_type="bidi_stream"} 9',
    'etcd_debugging_mvcc_events_total 216',
    'etcd_mvcc_put_total 217',
    `etcd_network_client_grpc_sent_bytes_total ${sent}`,
    'etcd_network_client_grpc_sent_bytes_total_other 5',
  ].join('\n');

describe('etcd counters of a scale-up window', () => {
  it('sums unary calls by method over their codes, leaves streams out, and reads the named counters', () => {
    expect(etcdCounters(page(371, 217, 472491))).toEqual({
      'etcd Range': 373,
      'etcd Txn': 217,
      'etcd watch events sent': 216,
      'etcd puts': 217,
      'etcd bytes sent': 472491,
    });
  });

  it('gives what a window cost as the difference of two readings', () => {
    const before = etcdCounters(page(371, 217, 472491));
    const after = etcdCounters(page(400, 300, 500000));
    expect(apiserverSince(before, after)).toEqual({
      'etcd Range': 29,
      'etcd Txn': 83,
      'etcd bytes sent': 27509,
    });
  });
});
