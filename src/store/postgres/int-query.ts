import type { Connection, PoolClient, Submittable } from 'pg';

/** A named statement returning at most one row of one integer column, prepared once per connection by IntQuery. */
export interface IntStatement {
  readonly name: string;
  readonly text: string;
  /** The connections on which the statement has been prepared. */
  readonly preparedOn: WeakSet<Connection>;
}

export function intStatement(name: string, text: string): IntStatement {
  return { name, text, preparedOn: new WeakSet() };
}

/**
 * Runs `statement` with text parameters on `client` and gives its one integer (undefined when it returns no row).
 * Settles after the server's ReadyForQuery, i.e. after the statement's implicit transaction has committed (or failed).
 */
export function runIntStatement(
  client: PoolClient,
  statement: IntStatement,
  values: (string | null)[],
): Promise<number | undefined> {
  return new Promise((resolve, reject) =>
    client.query(new IntQuery(statement, values, (err, value) => (err ? reject(err) : resolve(value)))),
  );
}

/**
 * A query for pg's Submittable interface (`client.query(submittable)`, the interface of pg-cursor and
 * pg-query-stream): Bind, Execute and Sync of a named statement, without pg's Query. pg's Query sends a Describe on
 * every call and builds a Result (field parsers, a row template) and an EventEmitter from the RowDescription it gets
 * back; for an append that is a fifth of the client's CPU per round trip. This one asks for no description: the
 * statement's one column is an integer in text format, known in advance.
 *
 * The statement is parsed on a connection the first time it runs there, after a Close of its name (not an error when
 * there is no such statement), so that a Parse that succeeded before a failed Bind never makes the next Parse fail.
 * It counts as prepared once a command completed on that connection.
 */
class IntQuery implements Submittable {
  private value: number | undefined;
  private settled = false;

  constructor(
    private readonly statement: IntStatement,
    private readonly values: (string | null)[],
    /** Public: pg wraps it when a query_timeout is set. */
    public callback: (err: Error | null, value?: number) => void,
  ) {}

  submit(connection: Connection): void {
    const { name, text, preparedOn } = this.statement;
    const stream = connection.stream as { cork?: () => void; uncork?: () => void };
    // One write for the whole message sequence, as pg's Query does.
    stream.cork?.();
    try {
      if (!preparedOn.has(connection)) {
        connection.close({ type: 'S', name }, true);
        connection.parse({ name, text, types: [] }, true);
      }
      connection.bind({ statement: name, values: this.values }, true);
      connection.execute({}, true);
      connection.sync();
    } finally {
      stream.uncork?.();
    }
  }

  handleDataRow(msg: { fields: (string | null)[] }): void {
    const field = msg.fields[0];
    this.value = field === null || field === undefined ? undefined : Number(field);
  }

  handleCommandComplete(_msg: unknown, connection: Connection): void {
    this.statement.preparedOn.add(connection);
  }

  /** An error from the server (pg has already dropped this query) or of the connection. */
  handleError(err: Error): void {
    this.settle(err);
  }

  handleReadyForQuery(): void {
    this.settle(null);
  }

  private settle(err: Error | null): void {
    if (this.settled) return;
    this.settled = true;
    this.callback(err, this.value);
  }

  // Messages this statement does not produce; pg's client calls these on the active query when they arrive.
  handleRowDescription(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyInResponse(): void {}
  handleCopyData(): void {}
}
