"""An in-memory gRPC server built on upstream Armada's own generated servicers (PyPI
armada-client 0.5.1: armada_client.armada.submit_pb2_grpc), standing in for Armada's server in
the tests of retryctl's gRPC client (tests/integration/grpc.rs).

It answers as upstream's services do (internal/server/retrypolicy/service.go,
internal/server/queue/queue_service.go at 207cc9e): create upserts, update of a missing policy
is NotFound `error: could not find retry policy "NAME"`, a queue naming a missing policy is
InvalidArgument `error creating queue: retry policies do not exist: "a", "b"`, delete of a
missing name succeeds, GetQueues streams the queues by name then one end marker.

Usage: python armada_double.py [--token TOKEN] [--deny-writes]
Prints `port N` on stdout once listening on 127.0.0.1, then serves until stdin closes.
"""

import sys
import threading
from concurrent import futures

import grpc
from armada_client.armada import submit_pb2 as pb
from armada_client.armada import submit_pb2_grpc as pb_grpc
from google.protobuf import empty_pb2

TOKEN = None
DENY_WRITES = False
LOCK = threading.Lock()
POLICIES = {}
QUEUES = {}


def check(context, write=False):
    """Upstream's interceptors: authenticate every call, then authorize writes."""
    if TOKEN is not None:
        metadata = dict(context.invocation_metadata())
        if metadata.get("authorization") != "Bearer " + TOKEN:
            context.abort(
                grpc.StatusCode.UNAUTHENTICATED,
                "Request could not be authenticated: Request could not be authenticated with any of the supported schemes.",
            )
    if write and DENY_WRITES:
        context.abort(
            grpc.StatusCode.PERMISSION_DENIED,
            "error creating retry policy: anonymous lacks permission create_retry_policy",
        )


def not_found_policy(context, name):
    context.abort(grpc.StatusCode.NOT_FOUND, 'error: could not find retry policy "%s"' % name)


class RetryPolicies(pb_grpc.RetryPolicyServiceServicer):
    def CreateRetryPolicy(self, request, context):
        check(context, write=True)
        with LOCK:
            POLICIES[request.name] = request.SerializeToString()
        return empty_pb2.Empty()

    def UpdateRetryPolicy(self, request, context):
        check(context, write=True)
        with LOCK:
            if request.name not in POLICIES:
                not_found_policy(context, request.name)
            POLICIES[request.name] = request.SerializeToString()
        return empty_pb2.Empty()

    def DeleteRetryPolicy(self, request, context):
        check(context, write=True)
        with LOCK:
            POLICIES.pop(request.name, None)
            for name, data in list(QUEUES.items()):
                q = pb.Queue.FromString(data)
                if request.name in q.retry_policies:
                    kept = [p for p in q.retry_policies if p != request.name]
                    del q.retry_policies[:]
                    q.retry_policies.extend(kept)
                    QUEUES[name] = q.SerializeToString()
        return empty_pb2.Empty()

    def GetRetryPolicy(self, request, context):
        check(context)
        with LOCK:
            data = POLICIES.get(request.name)
        if data is None:
            not_found_policy(context, request.name)
        return pb.RetryPolicy.FromString(data)

    def GetRetryPolicies(self, request, context):
        check(context)
        with LOCK:
            items = [pb.RetryPolicy.FromString(POLICIES[n]) for n in sorted(POLICIES)]
        return pb.RetryPolicyList(retry_policies=items)


class Queues(pb_grpc.QueueServiceServicer):
    def _put(self, request, context, doing):
        check(context, write=True)
        with LOCK:
            missing = [p for p in request.retry_policies if p not in POLICIES]
            if missing:
                context.abort(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    "error %s queue: retry policies do not exist: %s"
                    % (doing, ", ".join('"%s"' % p for p in missing)),
                )
            QUEUES[request.name] = request.SerializeToString()
        return empty_pb2.Empty()

    def CreateQueue(self, request, context):
        return self._put(request, context, "creating")

    def UpdateQueue(self, request, context):
        return self._put(request, context, "updating")

    def DeleteQueue(self, request, context):
        check(context, write=True)
        with LOCK:
            QUEUES.pop(request.name, None)
        return empty_pb2.Empty()

    def GetQueue(self, request, context):
        check(context)
        with LOCK:
            data = QUEUES.get(request.name)
        if data is None:
            context.abort(grpc.StatusCode.NOT_FOUND, 'error: could not find queue "%s"' % request.name)
        return pb.Queue.FromString(data)

    def GetQueues(self, request, context):
        check(context)
        with LOCK:
            items = [pb.Queue.FromString(QUEUES[n]) for n in sorted(QUEUES)]
        for q in items:
            yield pb.StreamingQueueMessage(queue=q)
        yield pb.StreamingQueueMessage(end=pb.EndMarker())


class Submit(pb_grpc.SubmitServicer):
    def Health(self, request, context):
        return pb.HealthCheckResponse(status=pb.HealthCheckResponse.SERVING)


def main():
    global TOKEN, DENY_WRITES
    args = sys.argv[1:]
    if "--token" in args:
        TOKEN = args[args.index("--token") + 1]
    DENY_WRITES = "--deny-writes" in args
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    pb_grpc.add_RetryPolicyServiceServicer_to_server(RetryPolicies(), server)
    pb_grpc.add_QueueServiceServicer_to_server(Queues(), server)
    pb_grpc.add_SubmitServicer_to_server(Submit(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print("port %d" % port, flush=True)
    # Serve until the test closes our stdin (or dies): never outlive it.
    sys.stdin.read()
    server.stop(0)


if __name__ == "__main__":
    main()
