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

  test('names, casts and quoted identifiers keep their digits; comments go', () => {
    expect(normalizeStatement('SELECT t1.col2 FROM "Table3" t1 WHERE t1.x::int4 > 10 -- hot path')).toBe('select t1.col2 from "table3" t1 where t1.x::int4 > ?');
    expect(normalizeStatement('/* app=web */ SELECT 1')).toBe('select ?');
    expect(normalizeStatement('GET user:123')).toBe('get user:?');
  });
});
