import { useId, useState, type FormEvent } from 'react';
import { ProjectOptions } from '../../components/pickers';
import { ChoiceField } from '../../components/ChoiceField';
import type { TimeWindow } from '../../lib/url-state';
import { useMetricNames } from '../metrics/api';
import type { ViewName, WidgetType } from './api';
import { COLUMNS, MIN_HEIGHT, MIN_WIDTH } from './layout';
import { VIEW_NAMES, VIEWS, type ParamField } from './views';
import { FormField } from '../../components/FormField';

/** What the form adds: the grid finds it a place. */
export interface NewWidget {
  title?: string;
  type: WidgetType;
  query: { view: ViewName; params: Record<string, string> };
  size: { w: number; h: number };
}

/** Heights the form offers; taller ones are a "Taller" away. */
const MAX_FORM_HEIGHT = 12;

/** The metric names reported in the window, offered while typing a name (any name may be typed). */
function MetricNameOptions({ id, project, window }: { id: string; project: string | undefined; window: TimeWindow }) {
  const names = useMetricNames(project, window);
  return (
    <datalist id={id}>
      {names.data?.data.map((metric) => (
        <option key={metric.name} value={metric.name} />
      ))}
    </datalist>
  );
}

function ParamInput({ field, value, onChange, project, window }: { field: ParamField; value: string; onChange: (value: string) => void; project: string | undefined; window: TimeWindow }) {
  const listId = useId();
  if (field.choices) return <ChoiceField label={field.label} name={field.name} value={value || undefined} choices={field.choices} anyLabel="Any" onChange={onChange} />;
  return (
    <label className="field">
      <span>
        {field.label}
        {!field.required && <span className="muted"> (optional)</span>}
      </span>
      <input type="text" name={field.name} value={value} required={field.required} placeholder={field.placeholder} list={field.metricNames ? listId : undefined} onChange={(event) => onChange(event.target.value)} />
      {field.metricNames && <MetricNameOptions id={listId} project={project} window={window} />}
    </label>
  );
}

/**
 * "Add a widget": the view, its parameters, how to show it, an optional title and a size. The view's own
 * rules are checked by the API when the dashboard is saved, and its refusal names the widget.
 */
export function WidgetForm({ scopeProject, window, onAdd, onClose }: { scopeProject: string | undefined; window: TimeWindow; onAdd: (widget: NewWidget) => void; onClose: () => void }) {
  const headingId = useId();
  const [view, setView] = useState<ViewName>('issues');
  const [values, setValues] = useState<Record<string, string>>({});
  const [project, setProject] = useState('');
  const [type, setType] = useState<WidgetType>('table');
  const [title, setTitle] = useState('');
  const [width, setWidth] = useState(6);
  const [height, setHeight] = useState(4);
  const spec = VIEWS[view];

  const chooseView = (next: ViewName) => {
    setView(next);
    setValues({});
    setType(VIEWS[next].chart ? 'timeseries' : 'table');
  };

  const submit = (event: FormEvent) => {
    event.preventDefault();
    const params = Object.fromEntries(
      [...(project ? [['project', project] as const] : []), ...spec.fields.map((field) => [field.name, (values[field.name] ?? '').trim()] as const)].filter(([, value]) => value !== ''),
    );
    onAdd({ ...(title.trim() && { title: title.trim() }), type, query: { view, params }, size: { w: width, h: height } });
  };

  return (
    <section className="panel widget-form" aria-labelledby={headingId}>
      <h2 id={headingId}>Add a widget</h2>
      <form onSubmit={submit}>
        <div className="widget-form-fields">
          <FormField label="View">
            {(control) => (
              <select {...control} name="view" value={view} onChange={(event) => chooseView(event.target.value as ViewName)}>
                {VIEW_NAMES.map((name) => (
                  <option key={name} value={name}>
                    {VIEWS[name].label}
                  </option>
                ))}
              </select>
            )}
          </FormField>
          <FormField label="Project">
            {(control) => (
              <select {...control} name="project" value={project} onChange={(event) => setProject(event.target.value)}>
                <option value="">Whichever the top bar picks</option>
                <ProjectOptions />
              </select>
            )}
          </FormField>
          {spec.fields.map((field) => (
            <ParamInput key={`${view}:${field.name}`} field={field} value={values[field.name] ?? ''} onChange={(value) => setValues({ ...values, [field.name]: value })} project={project || scopeProject} window={window} />
          ))}
          {spec.chart && (
            <FormField label="Show as">
              {(control) => (
                <select {...control} name="type" value={type} onChange={(event) => setType(event.target.value as WidgetType)}>
                  <option value="timeseries">Chart</option>
                  <option value="table">Table</option>
                </select>
              )}
            </FormField>
          )}
          <label className="field">
            <span>
              Title <span className="muted">(optional)</span>
            </span>
            <input type="text" name="title" value={title} maxLength={200} placeholder="Named after the view and its filters" onChange={(event) => setTitle(event.target.value)} />
          </label>
          <label className="field">
            <span>Width (columns of {COLUMNS})</span>
            <input type="number" name="width" min={MIN_WIDTH} max={COLUMNS} value={width} required onChange={(event) => setWidth(Number(event.target.value))} />
          </label>
          <label className="field">
            <span>Height (rows)</span>
            <input type="number" name="height" min={MIN_HEIGHT} max={MAX_FORM_HEIGHT} value={height} required onChange={(event) => setHeight(Number(event.target.value))} />
          </label>
        </div>
        <p className="small muted">{spec.description} The top bar's time range applies to every widget; its project, when one is picked, too.</p>
        <div className="actions">
          <button type="submit" className="primary">
            Add widget
          </button>
          <button type="button" onClick={onClose}>
            Close
          </button>
        </div>
      </form>
    </section>
  );
}
