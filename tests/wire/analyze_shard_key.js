// Run by .ci/run through mongosh against `odm serve --replica-set` (mongosh offers its
// analyzeShardKey and configureQueryAnalyzer helpers on replica sets and clusters only). Every
// step asserts what MongoDB 7.0+ answers; a failed assertion ends mongosh with a non-zero status.
const same = (actual, expected) => assert.strictEqual(JSON.stringify(actual), JSON.stringify(expected));
const coll = db.getSiblingDB("analyze_check").events;
coll.drop();

// 3000 events inserted in time order, with the ObjectIds mongosh makes (so that `_id` order is
// insertion order): `t` increases with insertion, `r` is a shuffle, `kind` has four values, one
// of them on half of the documents.
const docs = [];
for (let i = 0; i < 3000; i++) {
  docs.push({ t: i, r: (i * 7919) % 3000, kind: i % 2 === 0 ? "hot" : "k" + (i % 3) });
}
coll.insertMany(docs);
coll.createIndex({ t: 1 });
coll.createIndex({ r: "hashed" });
coll.createIndex({ kind: 1 });

// configureQueryAnalyzer: MongoDB's arguments and replies, old configuration included.
const on = coll.configureQueryAnalyzer({ mode: "full", samplesPerSecond: 50 });
same(on.newConfiguration, { mode: "full", samplesPerSecond: 50 });
assert.strictEqual(on.oldConfiguration, undefined);
let refused = null;
try {
  coll.configureQueryAnalyzer({ mode: "full", samplesPerSecond: 51 });
} catch (e) {
  refused = e.codeName;
}
assert.strictEqual(refused, "InvalidOptions");

// A known mix: 6 single-shard reads on t, 2 range reads, 2 scatter-gather reads; 2 updates by
// t, 1 delete without t.
for (let i = 0; i < 6; i++) coll.findOne({ t: 100 * i });
coll.find({ t: { $gte: 2500 } }).toArray();
coll.countDocuments({ t: { $lt: 10 } });
coll.find({ kind: "k1" }).toArray();
coll.distinct("kind");
coll.updateOne({ t: 5 }, { $set: { seen: true } });
coll.updateOne({ t: 6 }, { $set: { seen: true } });
coll.deleteOne({ kind: "k2" });

const samples = db.getSiblingDB("admin")
  .aggregate([{ $listSampledQueries: { namespace: "analyze_check.events" } }])
  .toArray();
assert.strictEqual(samples.length, 13);
assert.strictEqual(samples.filter((s) => s.cmdName === "find").length, 8);
same(samples[0].cmd.filter, { t: 0 });
assert.strictEqual(samples[0].ns, "analyze_check.events");
// Later stages run over the samples.
const updates = db.getSiblingDB("admin")
  .aggregate([
    { $listSampledQueries: { namespace: "analyze_check.events" } },
    { $match: { cmdName: "update" } },
    { $project: { _id: 0, filter: { $first: "$cmd.updates.q" } } },
  ])
  .toArray();
same(updates, [{ filter: { t: 5 } }, { filter: { t: 6 } }]);

// $listSampledQueries runs on admin with {aggregate: 1} only.
let misplaced = null;
try {
  db.getSiblingDB("analyze_check").aggregate([{ $listSampledQueries: {} }]).toArray();
} catch (e) {
  misplaced = e.codeName;
}
assert.strictEqual(misplaced, "InvalidNamespace");

// analyzeShardKey on the time key: monotonic, and the mix above under it.
const t = coll.analyzeShardKey({ t: 1 });
// (The delete above removed one of the 3000.) Counts are longs, as MongoDB gives them.
assert.strictEqual(Number(t.keyCharacteristics.numDocsTotal), 2999);
assert.strictEqual(Number(t.keyCharacteristics.numDistinctValues), 2999);
assert.strictEqual(t.keyCharacteristics.isUnique, false);
assert.strictEqual(t.keyCharacteristics.monotonicity.type, "monotonic");
assert.strictEqual(Number(t.readDistribution.sampleSize.total), 10);
assert.strictEqual(t.readDistribution.percentageOfSingleShardReads, 60);
assert.strictEqual(t.readDistribution.percentageOfMultiShardReads, 20);
assert.strictEqual(t.readDistribution.percentageOfScatterGatherReads, 20);
assert.strictEqual(t.readDistribution.numReadsByRange.length, 100);
assert.strictEqual(Number(t.writeDistribution.sampleSize.total), 3);
assert.strictEqual(Number(t.writeDistribution.sampleSize.update), 2);
assert(Math.abs(t.writeDistribution.percentageOfSingleWritesWithoutShardKey - 100 / 3) < 1e-9);

// The hashed key: never monotonic; the one hot value leads the most common values of `kind`.
const r = coll.analyzeShardKey({ r: "hashed" }, { readWriteDistribution: false });
assert.strictEqual(r.keyCharacteristics.monotonicity.type, "not monotonic");
assert.strictEqual(r.readDistribution, undefined);
const kind = coll.analyzeShardKey({ kind: 1 }, { readWriteDistribution: false });
same(kind.keyCharacteristics.mostCommonValues[0].value, { kind: "hot" });
assert.strictEqual(Number(kind.keyCharacteristics.mostCommonValues[0].frequency), 1500);
assert.strictEqual(Number(kind.keyCharacteristics.numDistinctValues), 4);

// A key without a supporting index, and an empty selection of metrics.
let missing = null;
try {
  coll.analyzeShardKey({ nothere: 1 }, { readWriteDistribution: false });
} catch (e) {
  missing = e.codeName;
}
assert.strictEqual(missing, "IllegalOperation");
let nothing = null;
try {
  coll.analyzeShardKey({ t: 1 }, { keyCharacteristics: false, readWriteDistribution: false });
} catch (e) {
  nothing = e.codeName;
}
assert.strictEqual(nothing, "InvalidOptions");

// A collection that does not exist, and an internal database.
const codeOf = (f) => {
  try {
    f();
  } catch (e) {
    return e.codeName;
  }
  return null;
};
assert.strictEqual(
  codeOf(() => db.getSiblingDB("analyze_check").nothere.configureQueryAnalyzer({ mode: "full", samplesPerSecond: 1 })),
  "NamespaceNotFound"
);
assert.strictEqual(
  codeOf(() => db.getSiblingDB("config").things.analyzeShardKey({ a: 1 })),
  "IllegalOperation"
);

const off = coll.configureQueryAnalyzer({ mode: "off" });
same(off.newConfiguration, { mode: "off" });
same(off.oldConfiguration, { mode: "full", samplesPerSecond: 50 });
print("analyzeShardKey script: every check passed");
