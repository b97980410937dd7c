import { MongoClient } from 'mongodb';
const c = await MongoClient.connect('mongodb://127.0.0.1:27017');
const dbs = (await c.db('admin').admin().listDatabases()).databases.map(d => d.name).filter(n => n.startsWith('slk_test'));
for (const name of dbs) {
  const db = c.db(name);
  const total = await db.collection('errorevents').estimatedDocumentCount();
  if (!total) continue;
  const t0 = Date.now(); const marked = await db.collection('errorevents').countDocuments({ issueId: { $ne: null } }); const t1 = Date.now();
  const issues = await db.collection('issues').find({}, { projection: { eventCount: 1 } }).toArray();
  console.log(name, { total, marked, countMs: t1 - t0, issues: issues.map(i => i.eventCount) });
}
await c.close();
