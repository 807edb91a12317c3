import { describe, expect, it } from 'vitest';
import { DeclinedEdits } from '../../src/daemon/declined-edits.js';

const edit = (editId: string, ...replaces: string[]) => ({ editId, replaces });

describe('DeclinedEdits', () => {
  it('holds declined sections and the size kept, for the model they were declined on', () => {
    const d = new DeclinedEdits(60_000);
    const model = {};
    expect(d.held(model, 'reserve', 0)).toBeUndefined();
    d.decline(model, [edit('e1', 's1', 's2'), edit('e2', 's5')], 20_000, 'reserve', 1_000);
    const held = d.held(model, 'reserve', 2_000);
    expect([...(held?.sectionIds ?? [])].sort()).toEqual(['s1', 's2', 's5']);
    expect(held?.keepTokens).toBe(20_000);
    // Another model (rebuilt, restored): its section ids are its own, nothing is held.
    expect(d.held({}, 'reserve', 2_000)).toBeUndefined();
    expect(d.held(model, 'reserve', 2_000)).toBeUndefined();
  });

  it('forgets an edit once its cooldown passes, or when the zone gets worse than it was declined in', () => {
    const d = new DeclinedEdits(60_000);
    const model = {};
    d.decline(model, [edit('e1', 's1')], 10_000, 'soft', 0);
    d.decline(model, [edit('e2', 's2')], 11_000, 'reserve', 30_000);
    expect([...(d.held(model, 'soft', 59_999)?.sectionIds ?? [])].sort()).toEqual(['s1', 's2']);
    // s1's cooldown is over; s2's is not.
    expect([...(d.held(model, 'soft', 60_000)?.sectionIds ?? [])]).toEqual(['s2']);
    expect(d.held(model, 'soft', 60_000)?.keepTokens).toBe(11_000);
    d.decline(model, [edit('e3', 's3')], 12_000, 'soft', 60_000);
    // Reserve is worse than soft: e3 is asked again, e2 (declined in reserve) still held.
    expect([...(d.held(model, 'reserve', 61_000)?.sectionIds ?? [])]).toEqual(['s2']);
    expect(d.size).toBe(1);
  });
});
