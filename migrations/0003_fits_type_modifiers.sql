-- etl.fits_type (error path only) now honours type modifiers: a value fits `character varying(3)` only when it
-- reads as the base type and survives the modifier unchanged, as an INSERT into such a column demands.
CREATE OR REPLACE FUNCTION etl.fits_type(value text, type_name text) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
DECLARE
  base text := type_name::regtype::text;
  same boolean;
BEGIN
  IF value IS NULL THEN
    RETURN true;
  END IF;
  EXECUTE format('SELECT CAST(CAST(%L AS %s) AS %s)::text = CAST(%L AS %s)::text', value, base, type_name, value, base) INTO same;
  RETURN same;
EXCEPTION WHEN others THEN
  RETURN false;
END;
$$;
