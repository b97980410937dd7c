import { normalizeStatement } from '../../src/shared/features/database/statements.js';

describe('statement normalisation', () => {
  test('calls that differ only in their values share a pattern', () => {
    expect(normalizeStatement('SELECT * FROM users WHERE id = 1')).toBe('select * from users where id = ?');
    expect(normalizeStatement('select *  from users\n where id=2')).toBe(normalizeStatement('SELECT * FROM users WHERE id = 1'));
    expect(normalizeStatement("select * from t where a<>1 and b>=2 and c->>'k' = 'v'")).toBe("select * from t where a <> ? and b >= ? and c->>? = ?");
    expect(normalizeStatement("SELECT name FROM t WHERE email = 'a@b.c' AND note = 'it''s'")).toBe('select name from t where email = ? and note = ?');
    expect(normalizeStatement('UPDATE t SET score = -1.5e3, flag = 0xFF WHERE id = $1')).toBe('update t set score = ?, flag = ? where id = ?');
    expect(normalizeStatement('SELECT * FROM t WHERE a = :name AND b = ?')).toBe('select * from t where a = ? and b = ?');
  });

  test('IN lists and VALUES rows collapse to one placeholder', () => {
    expect(normalizeStatement('SELECT * FROM t WHERE id IN (1, 2, 3)')).toBe('select * from t where id in (?)');
    expect(normalizeStatement('select * from t where id in (4)')).toBe('select * from t where id in (?)');
    expect(normalizeStatement("INSERT INTO t (a, b) VALUES (1, 'x'), (2, 'y')")).toBe('insert into t (a, b) values (?)');
    expect(normalizeStatement('INSERT INTO t (a,b) VALUES ($1,$2)')).toBe('insert into t (a, b) values (?)');
  });

  test("DB-API placeholders (%s, %(name)s) are bind parameters; modulo and LIKE patterns stay", () => {
    // psycopg2 and pymysql statements, and Sentry's Python integrations that record them as sent
    expect(normalizeStatement('SELECT * FROM orders WHERE id IN (%s, %s, %s)')).toBe('select * from orders where id in (?)');
    expect(normalizeStatement('SELECT * FROM orders WHERE id IN (%s,%s)')).toBe(normalizeStatement('SELECT * FROM orders WHERE id IN (%s, %s, %s)'));
    expect(normalizeStatement('UPDATE users SET name=%(name)s WHERE id = %(user_id)s LIMIT %s')).toBe('update users set name = ? where id = ? limit ?');
    expect(normalizeStatement('INSERT INTO t (a, b) VALUES (%s, %s), (%s, %s)')).toBe('insert into t (a, b) values (?)');
    expect(normalizeStatement('INSERT INTO t (a, b) VALUES (%(a)s, %(b)s)')).toBe('insert into t (a, b) values (?)');
    // the same call written with the other placeholder styles shares the pattern
    expect(normalizeStatement('SELECT * FROM t WHERE a = %s AND b IN (%s, %s)')).toBe(normalizeStatement('SELECT * FROM t WHERE a = $1 AND b IN ($2, $3)'));
    // a LIKE pattern is a literal (one placeholder), whatever its % signs; modulo keeps its operator
    expect(normalizeStatement("SELECT * FROM t WHERE name LIKE '%sale%' AND code LIKE '%s'")).toBe('select * from t where name like ? and code like ?');
    expect(normalizeStatement('SELECT * FROM t WHERE name LIKE %s')).toBe('select * from t where name like ?');
    expect(normalizeStatement('SELECT id % 2, id %size, a%%s FROM t WHERE id % 10 = %s')).toBe('select id % ?, id %size, a%%s from t where id % ? = ?');
  });

  test('names, casts and quoted identifiers keep their digits; comments go', () => {
    expect(normalizeStatement('SELECT t1.col2 FROM "Table3" t1 WHERE t1.x::int4 > 10 -- hot path')).toBe('select t1.col2 from "table3" t1 where t1.x::int4 > ?');
    expect(normalizeStatement('/* app=web */ SELECT 1')).toBe('select ?');
    expect(normalizeStatement('GET user:123')).toBe('get user:?');
  });
});
