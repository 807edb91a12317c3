import { describe, expect, it } from 'vitest';
import { DeclinedEdits } from '../../src/daemon/declined-edits.js';
import type { Zone } from '../../src/daemon/lifecycle.js';

const edit = (editId: string, ...replaces: string[]) => ({ editId, replaces });
const RESERVE = 0.15;
/** A session state: its zone and headroom (share free). */
const at = (zone: Zone, headroom: number) => ({ zone, headroom });

describe('DeclinedEdits', () => {
  it('holds declined sections and the size kept, for the model they were declined on', () => {
    const d = new DeclinedEdits(60_000);
    const model = {};
    expect(d.held(model, at('reserve', 0.1), RESERVE, 0)).toBeUndefined();
    d.decline(model, [edit('e1', 's1', 's2'), edit('e2', 's5')], 20_000, at('reserve', 0.1), 1_000);
    const held = d.held(model, at('reserve', 0.1), RESERVE, 2_000);
    expect([...(held?.sectionIds ?? [])].sort()).toEqual(['s1', 's2', 's5']);
    expect(held?.keepTokens).toBe(20_000);
    // Another model (rebuilt, restored): its section ids are its own, nothing is held.
    expect(d.held({}, at('reserve', 0.1), RESERVE, 2_000)).toBeUndefined();
    expect(d.held(model, at('reserve', 0.1), RESERVE, 2_000)).toBeUndefined();
  });

  it('forgets an edit once its cooldown passes, or when the zone gets worse than it was declined in', () => {
    const d = new DeclinedEdits(60_000);
    const model = {};
    d.decline(model, [edit('e1', 's1')], 10_000, at('soft', 0.3), 0);
    d.decline(model, [edit('e2', 's2')], 11_000, at('reserve', 0.12), 30_000);
    expect([...(d.held(model, at('soft', 0.3), RESERVE, 59_999)?.sectionIds ?? [])].sort()).toEqual(['s1', 's2']);
    // s1's cooldown is over; s2's is not.
    expect([...(d.held(model, at('soft', 0.3), RESERVE, 60_000)?.sectionIds ?? [])]).toEqual(['s2']);
    expect(d.held(model, at('soft', 0.3), RESERVE, 60_000)?.keepTokens).toBe(11_000);
    d.decline(model, [edit('e3', 's3')], 12_000, at('soft', 0.3), 60_000);
    // Reserve is worse than soft: e3 is asked again, e2 (declined in reserve) still held.
    expect([...(d.held(model, at('reserve', 0.12), RESERVE, 61_000)?.sectionIds ?? [])]).toEqual(['s2']);
    expect(d.size).toBe(1);
  });

  it('forgets a hold made in the reserve (the worst zone) once the window is full, within the cooldown', () => {
    const d = new DeclinedEdits(600_000);
    const model = {};
    d.decline(model, [edit('e1', 's1')], 27_000, at('reserve', 0.14), 0);
    // Still in the reserve, a little less free: held.
    expect([...(d.held(model, at('reserve', 0.1), RESERVE, 1_000)?.sectionIds ?? [])]).toEqual(['s1']);
    // Headroom 0: the agent's window is full, nothing is held back any more.
    expect(d.held(model, at('reserve', 0), RESERVE, 2_000)).toBeUndefined();
    expect(d.size).toBe(0);
  });

  it('forgets a hold once headroom fell by more than half the reserve since the decline', () => {
    const d = new DeclinedEdits(600_000);
    const model = {};
    d.decline(model, [edit('e1', 's1')], 25_000, at('reserve', 0.14), 0);
    // Fallen by 0.07 (less than 0.075): held.
    expect(d.held(model, at('reserve', 0.07), RESERVE, 1_000)?.keepTokens).toBe(25_000);
    // Fallen by 0.08: asked again, though the zone is the same and the cooldown is not over.
    expect(d.held(model, at('reserve', 0.06), RESERVE, 2_000)).toBeUndefined();
  });
});
