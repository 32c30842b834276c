"""The user side: ModelBuilder input records, the compiler to an immutable Model, particle bodies."""
