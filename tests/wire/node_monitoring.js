// The official Node driver's default server monitoring against `odm serve`, over a connection
// held for minutes (issue 47's item 8). The driver monitors with the streaming `hello`
// (`topologyVersion`, `maxAwaitTimeMS`, `exhaustAllowed`) and expects a reply flagged
// `moreToCome` after each wait; a server that answers once and stops makes it report the
// server Unknown and clear its pool, failing the operations in flight.
//
// Passes when, over HOLD_SECONDS (default 180) of reads and writes every two seconds: the
// driver received awaited (streamed) heartbeats, no heartbeat failed, the pool was never
// cleared, the server never turned Unknown, and no operation failed.
const { MongoClient } = require("mongodb");

const uri = process.argv[2];
const holdSeconds = Number(process.env.HOLD_SECONDS || 180);

async function main() {
  const client = new MongoClient(uri, { heartbeatFrequencyMS: 10000 });
  const seen = { awaited: 0, polled: 0, failedHeartbeats: [], cleared: 0, unknown: 0, failedOps: [] };
  client.on("serverHeartbeatSucceeded", (e) => (e.awaited ? seen.awaited++ : seen.polled++));
  client.on("serverHeartbeatFailed", (e) => seen.failedHeartbeats.push(String(e.failure)));
  client.on("connectionPoolCleared", () => seen.cleared++);
  client.on("serverDescriptionChanged", (e) => {
    if (e.newDescription.type === "Unknown") seen.unknown++;
  });
  await client.connect();
  const coll = client.db("monitoring").collection("ticks");
  await coll.deleteMany({});
  const end = Date.now() + holdSeconds * 1000;
  let ops = 0;
  while (Date.now() < end) {
    try {
      await coll.insertOne({ at: new Date(), n: ops });
      const found = await coll.countDocuments({});
      if (found !== ops + 1) throw new Error(`counted ${found} documents after ${ops + 1} inserts`);
      ops++;
    } catch (e) {
      seen.failedOps.push(String(e));
    }
    await new Promise((resolve) => setTimeout(resolve, 2000));
  }
  await client.close();
  console.log(
    `held ${holdSeconds} s: ${ops} rounds, ${seen.awaited} streamed heartbeats, ` +
      `${seen.polled} polled, ${seen.failedHeartbeats.length} failed, ` +
      `${seen.cleared} pool clears, ${seen.unknown} times Unknown, ${seen.failedOps.length} failed operations`,
  );
  const problems = [];
  // One streamed reply per maxAwaitTimeMS (the heartbeat frequency): a few over the hold.
  const expected = Math.floor(holdSeconds / 10) - 2;
  if (seen.awaited < expected) problems.push(`only ${seen.awaited} streamed heartbeats (expected ${expected})`);
  if (seen.failedHeartbeats.length) problems.push(`failed heartbeats: ${seen.failedHeartbeats.slice(0, 3).join("; ")}`);
  if (seen.cleared) problems.push(`the pool was cleared ${seen.cleared} times`);
  if (seen.unknown) problems.push(`the server turned Unknown ${seen.unknown} times`);
  if (seen.failedOps.length) problems.push(`failed operations: ${seen.failedOps.slice(0, 3).join("; ")}`);
  if (problems.length) {
    console.error(problems.join("\n"));
    process.exit(1);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
