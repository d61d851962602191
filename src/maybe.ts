// Values that may come now or later. The memory and file stores answer at once, a database later;
// code above the store chains on either with then(), so that a read from memory costs no promise
// and no trip through the microtask queue (a read by id is a few microseconds in all).

export type Maybe<T> = T | Promise<T>;

/** `next(value)`, at once when `value` is already here. */
export function then<T, U>(value: Maybe<T>, next: (value: T) => Maybe<U>): Maybe<U> {
  return value instanceof Promise ? value.then(next) : next(value);
}
