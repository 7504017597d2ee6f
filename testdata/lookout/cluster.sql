-- What the cluster of testdata/lookout/lookout.sql runs, as upstream's server stores it
-- (docs/lookout.md; migrations 007_queue.sql and 035_create_retry_policy.sql): the policy set of
-- testdata/lookout/upstream-old/ (`ml-old`, attached to queues `ml` and `batch`). Each
-- `definition` is protobuf (`api.RetryPolicy`, `api.Queue`) written by upstream's generated
-- Python classes (armada-client 0.5.1: `submit_pb2.X(...).SerializeToString()`),
-- not by retryctl; the attachments are rows of `queue_retry_policy`, as upstream writes them.
-- Load after lookout.sql:
--   psql "$DSN" -v ON_ERROR_STOP=1 -f testdata/lookout/cluster.sql
BEGIN;
INSERT INTO retry_policy (name, definition) VALUES ('ml-old', '\x0a066d6c2d6f6c6410011801221b08022a08696e7465726e616c320d6c656173652d65787069726564'::bytea);
INSERT INTO queue (name, definition) VALUES ('batch', '\x0a05626174636811000000000000f03f'::bytea);
INSERT INTO queue (name, definition) VALUES ('ml', '\x0a026d6c11000000000000f03f'::bytea);
INSERT INTO queue_retry_policy (queue_name, policy_name, ordinal) VALUES ('ml', 'ml-old', 0), ('batch', 'ml-old', 0);
COMMIT;
