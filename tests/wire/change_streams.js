// mongosh's watch() against `odm serve --replica-set rs0` (run by tests/wire/mongosh.sh):
// collection and database streams, the events' shape, resume tokens and invalidate. Any failed
// assertion ends mongosh with a non-zero status.
const assert = require("assert");
const same = (actual, expected) => assert.strictEqual(JSON.stringify(actual), JSON.stringify(expected));
const store = db.getSiblingDB("watch_check");
store.dropDatabase();
const orders = store.orders;

// The next event, through as many getMores as it takes (each waits maxAwaitTimeMS).
const next = (stream) => {
  for (let i = 0; i < 50; i++) {
    const event = stream.tryNext();
    if (event !== null) {
      return event;
    }
  }
  throw new Error("no event arrived");
};

const stream = orders.watch([], { maxAwaitTimeMS: 200, fullDocument: "updateLookup" });
const all = store.watch([{ $match: { operationType: { $in: ["insert", "delete"] } } }], {
  maxAwaitTimeMS: 200,
});
orders.insertOne({ _id: 1, customer: "ann", total: 5 });
orders.updateOne({ _id: 1 }, { $inc: { total: 10 }, $set: { state: "paid" } });
orders.deleteOne({ _id: 1 });
store.other.insertOne({ _id: "x" });

const insert = next(stream);
assert.strictEqual(insert.operationType, "insert");
same(insert.fullDocument, { _id: 1, customer: "ann", total: 5 });
same(insert.ns, { db: "watch_check", coll: "orders" });
same(insert.documentKey, { _id: 1 });
assert.ok(insert.clusterTime instanceof Timestamp);
const update = next(stream);
assert.strictEqual(update.operationType, "update");
same(update.updateDescription.updatedFields, { total: 15, state: "paid" });
same(update.updateDescription.removedFields, []);
assert.strictEqual(update.fullDocument, null, "updateLookup after the delete finds nothing");
assert.strictEqual(next(stream).operationType, "delete");

// The database stream: inserts and deletes of every collection, in commit order.
const seen = [next(all), next(all), next(all)].map((e) => `${e.operationType} ${e.ns.coll}`);
same(seen, ["insert orders", "delete orders", "insert other"]);

// A token resumes after its event.
const resumed = orders.watch([], { maxAwaitTimeMS: 200, resumeAfter: insert._id });
assert.strictEqual(next(resumed).operationType, "update");
assert.strictEqual(next(resumed).operationType, "delete");

// Dropping the collection: drop, then invalidate, and the stream is closed.
orders.drop();
assert.strictEqual(next(stream).operationType, "drop");
const invalidate = next(stream);
assert.strictEqual(invalidate.operationType, "invalidate");
assert.ok(stream.isClosed());

// startAfter an invalidate watches the collection created again.
const after = orders.watch([], { maxAwaitTimeMS: 200, startAfter: invalidate._id });
orders.insertOne({ _id: 2 });
same(next(after).documentKey, { _id: 2 });
print("change streams script: every check passed");
