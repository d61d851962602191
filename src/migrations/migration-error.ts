/** A migration file or step that is wrong, or a migration the records refuse: said naming the file and step. */
export class MigrationError extends Error {
  override name = "MigrationError";
}
