/**
 * What to do about a PostgreSQL connection that failed. The server's and the system's messages say what went wrong
 * ("password authentication failed", "connect ECONNREFUSED 127.0.0.1:5433") but an operator who typed a wrong --db
 * wants the next step; this names it from the SQLSTATE or the socket's code, and says nothing where it cannot tell.
 */

interface ErrorLike {
  code?: unknown;
  message?: unknown;
}

const fields = (e: unknown): { code: string; message: string } => {
  const err = e as ErrorLike | undefined;
  return {
    code: typeof err?.code === 'string' ? err.code : '',
    message: typeof err?.message === 'string' ? err.message : String(e),
  };
};

/**
 * The next step for a failed connection to the database at `location` (the URL without its password), or undefined
 * where the error says nothing an operator can act on.
 */
export function databaseAdvice(e: unknown, location: string): string | undefined {
  const { code, message } = fields(e);
  let host = '';
  try {
    const u = new URL(location);
    host = `${u.hostname || 'localhost'}:${u.port || '5432'}`;
  } catch {
    // A location that is not a URL: the advice names no host.
  }
  const at = host ? ` at ${host}` : '';
  if (code === '53300') return fullAdvice(message);
  if (code === '28P01')
    return 'check the user name and password in --db (postgres://USER:PASSWORD@HOST:PORT/DATABASE)';
  if (code === '28000')
    return /no pg_hba\.conf entry/i.test(message)
      ? "the server's pg_hba.conf lets no such connection in: add a line for this host, user and database there (or connect from an allowed host), then reload the server"
      : 'check the user name in --db: the server does not know it (create it with CREATE ROLE … LOGIN)';
  if (code === '3D000')
    return 'create that database (createdb NAME, or CREATE DATABASE NAME) or name an existing one in --db';
  if (code === '42501')
    return "the user in --db may not create tables there: grant it CREATE on the database and its schema, or use the database's owner";
  if (code === '57P03') return 'the server is starting or shutting down: try again in a moment';
  if (code === 'ECONNREFUSED')
    return `nothing accepts connections${at}: start PostgreSQL there, or correct the host and port in --db`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN')
    return 'the host name in --db does not resolve: check its spelling, or give an address';
  if (
    code === 'ETIMEDOUT' ||
    code === 'EHOSTUNREACH' ||
    /timeout exceeded when trying to connect/i.test(message)
  )
    return `no answer${at}: check the host and port in --db, and that no firewall drops the connection`;
  if (/does not support SSL/i.test(message))
    return 'the server does not take SSL: drop sslmode=require (or ssl=true) from --db, or turn SSL on at the server';
  return undefined;
}

/**
 * Every connection slot taken (SQLSTATE 53300): the server's own limit, or one set on the role or the database, which
 * a different setting raises.
 */
export function fullAdvice(message: string): string {
  const role = /too many connections for role "([^"]*)"/i.exec(message);
  if (role)
    return `the role ${role[1]}'s connection limit is reached: raise it (ALTER ROLE "${role[1]}" CONNECTION LIMIT N) or stop some of its clients, then try again`;
  const db = /too many connections for database "([^"]*)"/i.exec(message);
  if (db)
    return `the database ${db[1]}'s connection limit is reached: raise it (ALTER DATABASE "${db[1]}" CONNECTION LIMIT N) or stop some of its clients, then try again`;
  return "raise the server's max_connections or stop some of its clients, then try again";
}

/** The message with its advice after it, where there is one. */
export function withAdvice(message: string, e: unknown, location: string): string {
  const advice = databaseAdvice(e, location);
  return advice ? `${message}; ${advice}` : message;
}
