import { describe, expect, it } from 'vitest';
import { databaseAdvice, fullAdvice, withAdvice } from './db-advice.js';

const at = 'postgres://ops:***@db.example:6543/runs';
// What node-postgres throws: the server's SQLSTATE, or the socket's code, beside its message.
const err = (code: string, message: string) => Object.assign(new Error(message), { code });

describe('what to do about a failed connection', () => {
  it('names the next step for each way a --db goes wrong', () => {
    expect(databaseAdvice(err('28P01', 'password authentication failed for user "ops"'), at)).toMatch(
      /check the user name and password in --db/,
    );
    expect(databaseAdvice(err('3D000', 'database "runs" does not exist'), at)).toMatch(
      /create that database .* or name an existing one/,
    );
    expect(databaseAdvice(err('28000', 'role "ops" does not exist'), at)).toMatch(/CREATE ROLE/);
    expect(
      databaseAdvice(
        err('28000', 'no pg_hba.conf entry for host "10.0.0.2", user "ops", database "runs"'),
        at,
      ),
    ).toMatch(/pg_hba\.conf/);
    expect(databaseAdvice(err('ECONNREFUSED', 'connect ECONNREFUSED 10.0.0.9:6543'), at)).toBe(
      'nothing accepts connections at db.example:6543: start PostgreSQL there, or correct the host and port in --db',
    );
    expect(databaseAdvice(err('ENOTFOUND', 'getaddrinfo ENOTFOUND db.example'), at)).toMatch(
      /does not resolve/,
    );
    expect(databaseAdvice(new Error('timeout exceeded when trying to connect'), at)).toMatch(
      /no answer at db\.example:6543/,
    );
    expect(databaseAdvice(err('42501', 'permission denied for schema public'), at)).toMatch(
      /grant it CREATE/,
    );
    // The default port where the URL gives none.
    expect(databaseAdvice(err('ECONNREFUSED', 'x'), 'postgres://h/db')).toMatch(/at h:5432/);
  });

  it('a full server, role or database: the limit that was reached is the one to raise', () => {
    expect(fullAdvice('sorry, too many clients already')).toMatch(/max_connections/);
    expect(fullAdvice('too many connections for role "ops"')).toBe(
      'the role ops\'s connection limit is reached: raise it (ALTER ROLE "ops" CONNECTION LIMIT N) or stop some of its clients, then try again',
    );
    expect(fullAdvice('too many connections for database "runs"')).toMatch(
      /ALTER DATABASE "runs" CONNECTION LIMIT/,
    );
    expect(fullAdvice('too many connections for role "ops"')).not.toMatch(/max_connections/);
  });

  it('says nothing where the error names no step', () => {
    expect(databaseAdvice(new Error('something else'), at)).toBeUndefined();
    expect(withAdvice('cannot open X', new Error('odd'), at)).toBe('cannot open X');
    expect(withAdvice('cannot open X', err('3D000', 'database "runs" does not exist'), at)).toMatch(
      /^cannot open X; create that database/,
    );
  });
});
