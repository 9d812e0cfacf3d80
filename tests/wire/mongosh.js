// Run by .ci/run through mongosh against `odm serve`: every step asserts what MongoDB answers,
// and a failed assertion ends mongosh with a non-zero status.
const coll = db.getSiblingDB("mongosh_check").items;
// Values from the shell and from the script live in different realms: compare as JSON.
const same = (actual, expected) => assert.strictEqual(JSON.stringify(actual), JSON.stringify(expected));
coll.drop();

const inserted = coll.insertMany([
  { _id: 1, kind: "a", n: 5 },
  { _id: 2, kind: "b", n: 7 },
  { _id: 3, kind: "a", n: 9 },
]);
assert.strictEqual(Object.keys(inserted.insertedIds).length, 3);
assert.strictEqual(coll.insertOne({ _id: 4, kind: "c", n: 1 }).insertedId, 4);

const found = coll.find({ kind: "a" }).sort({ n: -1 }).toArray();
same(found.map((d) => d._id), [3, 1]);

const totals = coll
  .aggregate([{ $group: { _id: "$kind", total: { $sum: "$n" } } }, { $sort: { _id: 1 } }])
  .toArray();
same(totals, [
  { _id: "a", total: 14 },
  { _id: "b", total: 7 },
  { _id: "c", total: 1 },
]);

assert.strictEqual(coll.createIndex({ kind: 1, n: -1 }), "kind_1_n_-1");
const indexes = coll.getIndexes().map((i) => i.name);
same(indexes, ["_id_", "kind_1_n_-1"]);

const plan = coll.find({ kind: "a" }).explain();
assert.strictEqual(plan.queryPlanner.winningPlan.inputStage.indexName, "kind_1_n_-1");

// A pipeline's explain shows the find its head runs as, then each stage. The group reads
// `kind` and `n`, both in the index: a covered scan in key order, grouped as it streams.
const grouped = coll
  .explain("executionStats")
  .aggregate([{ $group: { _id: "$kind", total: { $sum: "$n" } } }, { $sort: { total: -1 } }]);
const head = grouped.stages[0].$cursor;
assert.strictEqual(head.queryPlanner.winningPlan.stage, "PROJECTION_COVERED");
assert.strictEqual(head.queryPlanner.winningPlan.inputStage.indexName, "kind_1_n_-1");
assert.strictEqual(head.executionStats.totalDocsExamined, 0);
same(grouped.stages.slice(1).map((s) => Object.keys(s)[0]), ["$group", "$sort"]);
assert.strictEqual(grouped.stages[1].nReturned, 3);
assert.strictEqual(grouped.stages[1].inKeyOrder, true);

assert.strictEqual(coll.updateOne({ _id: 2 }, { $inc: { n: 1 } }).modifiedCount, 1);
assert.strictEqual(coll.findOne({ _id: 2 }).n, 8);
assert.strictEqual(coll.deleteMany({ kind: "a" }).deletedCount, 2);
assert.strictEqual(coll.countDocuments(), 2);

let duplicate = null;
try {
  coll.insertOne({ _id: 2 });
} catch (e) {
  duplicate = e.code;
}
assert.strictEqual(duplicate, 11000);

print("mongosh script: every check passed");
