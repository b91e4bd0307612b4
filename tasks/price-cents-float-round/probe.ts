import { priceTask } from '../price-cents/task.js';

export const priceCentsFloatRound = priceTask({
  id: 'price-cents-float-round',
  title: 'prices rounded with round(float(t) * 100): a half cent goes to even, or down where the double is below it',
  payload: 'tasks/price-cents-float-round',
  expected: 'reject',
});
