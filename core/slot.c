/* slot.c - placeholder until the implementation lands. */
typedef int fg_placeholder_slot;
