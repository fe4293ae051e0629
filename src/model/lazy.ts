/**
 * A property computed when it is first read: derived values that most runs never read (the fingerprint of every
 * live object, the place of every field of a manifest) are not computed for all of them. Pure.
 */

/**
 * Defines `key` on `target` as an enumerable property whose value `compute` gives on first read; from then on (or
 * once assigned) it is a plain data property. Spreading or serialising the object reads it like any other.
 */
export function lazyProperty<T extends object, K extends PropertyKey, V>(target: T, key: K, compute: () => V): T & Record<K, V> {
  const settle = (value: V): V => {
    Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
    return value;
  };
  return Object.defineProperty(target, key, {
    get: () => settle(compute()),
    set: settle,
    enumerable: true,
    configurable: true,
  }) as T & Record<K, V>;
}
